//! The function declarations the checker resolves calls against: one data table of overloads,
//! each with cel-go's stable overload id, its function name, whether it is a receiver call,
//! its argument types (the receiver first) and its result type. The standard library is in
//! [`super::stdlib`], Kubernetes' libraries and the cel-go extensions Kubernetes 1.35 enables
//! in [`super::kubernetes`]. A cost estimator keys its estimates by these ids.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::types::Type;

/// A type in a declaration, as constant data: CEL's types, the Kubernetes opaque types and
/// type parameters (`A` in `list(A).size()`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sig {
    /// `dyn`: any value.
    Dyn,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    /// `google.protobuf.Duration`.
    Duration,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// `list(elem)`.
    List(&'static Sig),
    /// `map(key, value)`.
    Map(&'static Sig, &'static Sig),
    /// `optional_type(inner)`.
    Optional(&'static Sig),
    /// `type(inner)`: a type value.
    Type(&'static Sig),
    /// A Kubernetes library type by its CEL name (`kubernetes.Quantity`, `net.IP`).
    Opaque(&'static str),
    /// A type parameter, the same type wherever it occurs in one overload.
    Param(&'static str),
}

#[allow(dead_code, reason = "the cost estimator reads declarations through it")]
impl Sig {
    /// The [`Type`] this stands for; parameters are [`Type::Param`].
    pub fn to_type(self) -> Type {
        match self {
            Sig::Dyn => Type::Dyn,
            Sig::Bool => Type::Bool,
            Sig::Int => Type::Int,
            Sig::Uint => Type::Uint,
            Sig::Double => Type::Double,
            Sig::String => Type::String,
            Sig::Bytes => Type::Bytes,
            Sig::Duration => Type::Duration,
            Sig::Timestamp => Type::Timestamp,
            Sig::List(e) => Type::List(Box::new(e.to_type())),
            Sig::Map(k, v) => Type::Map(Box::new(k.to_type()), Box::new(v.to_type())),
            Sig::Optional(i) => Type::Optional(Box::new(i.to_type())),
            Sig::Type(i) => Type::Type(Box::new(i.to_type())),
            Sig::Opaque(n) => Type::Opaque(n),
            Sig::Param(n) => Type::Param(n),
        }
    }
}

/// One overload of a function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overload {
    /// cel-go's (or Kubernetes') overload id: `add_int64`, `list_a_index_of_int`.
    pub id: &'static str,
    /// The function name as written (`_+_`, `size`, `optional.of`, `format.dns1123Label`).
    pub function: &'static str,
    /// A receiver call (`x.f(...)`): `args[0]` is the receiver's type.
    pub receiver: bool,
    pub args: &'static [Sig],
    pub result: Sig,
}

/// A global overload.
pub(crate) const fn global(
    id: &'static str,
    function: &'static str,
    args: &'static [Sig],
    result: Sig,
) -> Overload {
    Overload {
        id,
        function,
        receiver: false,
        args,
        result,
    }
}

/// A receiver overload; `args[0]` is the receiver.
pub(crate) const fn member(
    id: &'static str,
    function: &'static str,
    args: &'static [Sig],
    result: Sig,
) -> Overload {
    Overload {
        id,
        function,
        receiver: true,
        args,
        result,
    }
}

/// Every overload the checker knows, standard library first.
pub fn overloads() -> impl Iterator<Item = &'static Overload> {
    super::stdlib::OVERLOADS
        .iter()
        .chain(super::stdlib::ORDERING.iter().flatten())
        .chain(super::stdlib::TIMESTAMP_ACCESSORS.iter().flatten())
        .chain(super::stdlib::OPTIONAL.iter())
        .chain(super::kubernetes::OVERLOADS.iter())
        .chain(super::kubernetes::EXTENSIONS.iter())
        .chain(super::kubernetes::TEMPLATED.iter())
}

/// The overloads of `function`, in declaration order; `None` when no library declares it.
pub fn function(function: &str) -> Option<&'static [&'static Overload]> {
    static TABLE: OnceLock<HashMap<&'static str, Vec<&'static Overload>>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut table: HashMap<&'static str, Vec<&'static Overload>> = HashMap::new();
        for overload in overloads() {
            table.entry(overload.function).or_default().push(overload);
        }
        table
    });
    table.get(function).map(Vec::as_slice)
}

/// The overload with id `id`.
#[allow(dead_code, reason = "the cost estimator looks overloads up by id")]
pub fn overload(id: &str) -> Option<&'static Overload> {
    overloads().find(|o| o.id == id)
}
