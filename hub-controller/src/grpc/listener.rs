//! The connections the gRPC server takes: at most a configured number open at once (each holds
//! a permit until it closes); beyond that a new connection is closed at once, so clients that
//! open connections and never finish them cannot exhaust the process's file descriptors.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// How long the accept loop rests after the system refuses it a socket (out of descriptors).
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);
/// At most one warning about refused connections per this period.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// A TCP connection the server admitted, holding its place among the open ones.
pub struct Admitted {
    stream: TcpStream,
    _permit: OwnedSemaphorePermit,
}

/// The connections `listener` accepts, at most `max` open at once. The listener is shared so
/// that a replica that starts leading hands its socket from the refusing server to the serving
/// one without closing it.
pub fn admit(listener: Arc<TcpListener>, max: usize) -> impl Stream<Item = io::Result<Admitted>> {
    let permits = Arc::new(Semaphore::new(max.max(1)));
    let state = (listener, permits, None::<Instant>, 0u64);
    futures::stream::unfold(
        state,
        move |(listener, permits, mut warned, mut refused)| async move {
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "cannot accept a gRPC connection");
                        tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                        continue;
                    }
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    refused += 1;
                    if warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
                        tracing::warn!(%peer, max, refused, "too many open gRPC connections; closing new ones");
                        warned = Some(Instant::now());
                    }
                    drop(stream);
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let admitted = Admitted {
                    stream,
                    _permit: permit,
                };
                return Some((Ok(admitted), (listener, permits, warned, refused)));
            }
        },
    )
}

impl Connected for Admitted {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for Admitted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Admitted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
