//! The etcd backend of a build without it (the `etcd` feature is off: building it needs
//! `protoc`). Its settings parse and are checked as in a build with it; opening it says how to
//! get a build that has it.

use super::{
    Backend, Error, EventStream, KeyValue, ListOptions, ListPage, Result, Revision, Usage,
};
use bytes::Bytes;

pub use super::etcd_options::*;

/// Fails: this build has no etcd client.
pub async fn erase(_options: &EtcdOptions) -> Result<i64> {
    Err(Error::Backend(
        "this atoll was built without etcd storage; build it with the etcd feature".into(),
    ))
}

/// No etcd backend in this build: it cannot be made.
pub enum EtcdBackend {}

impl EtcdBackend {
    /// Fails: this build has no etcd backend.
    pub async fn connect(_options: &EtcdOptions) -> Result<Self> {
        Err(Error::Backend(
            "this atoll was built without etcd storage; build it with the etcd feature (`cargo build --release -p atoll --features etcd`, which needs protoc)"
                .into(),
        ))
    }

    /// Never called: no backend of this kind exists.
    pub async fn share(&self, _value: Bytes) -> Result<Bytes> {
        match *self {}
    }
}

#[async_trait::async_trait]
impl Backend for EtcdBackend {
    async fn create(&self, _: &str, _: Bytes) -> Result<Revision> {
        match *self {}
    }
    async fn update(&self, _: &str, _: Bytes, _: Revision) -> Result<Revision> {
        match *self {}
    }
    async fn delete(&self, _: &str, _: Option<Revision>) -> Result<(Revision, KeyValue)> {
        match *self {}
    }
    async fn get(&self, _: &str) -> Result<Option<KeyValue>> {
        match *self {}
    }
    async fn list(&self, _: ListOptions<'_>) -> Result<ListPage> {
        match *self {}
    }
    async fn watch(&self, _: &str, _: Revision) -> Result<EventStream> {
        match *self {}
    }
    async fn compact(&self, _: Revision) -> Result<()> {
        match *self {}
    }
    fn current_revision(&self) -> Revision {
        match *self {}
    }
    fn compacted_revision(&self) -> Revision {
        match *self {}
    }
    fn usage(&self) -> Usage {
        match *self {}
    }
}
