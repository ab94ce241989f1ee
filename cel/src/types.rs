//! Static types, as the checker infers them: CEL's own, plus object types built from a CRD's
//! structural schema (declared properties only, names already escaped) and the opaque types
//! of the Kubernetes libraries.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// Unknown until run time (`x-kubernetes-int-or-string`, `dyn(x)`, a JSON value).
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    List(Box<Type>),
    Map(Box<Type>, Box<Type>),
    /// An object of a schema: field access is checked against its declared fields.
    Object(Arc<ObjectType>),
    Optional(Box<Type>),
    /// The type of a type value (`int` has type `type(int)`).
    Type(Box<Type>),
    /// A Kubernetes library type by its CEL name (`kubernetes.Quantity`, `net.IP`, ...).
    Opaque(&'static str),
    /// A type parameter of a function declaration (`A` in `list(A).size()`).
    Param(&'static str),
    /// The type of an expression that failed to check.
    Error,
}

/// An object type from a structural schema. `name` is what messages show; Kubernetes names
/// them by path (`self`, `self.spec`, `self.spec.items.@idx`).
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectType {
    pub name: String,
    /// The declared properties, by their CEL (escaped) names.
    pub fields: BTreeMap<Arc<str>, Type>,
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Dyn => f.write_str("dyn"),
            Type::Null => f.write_str("null_type"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::String => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Duration => f.write_str("google.protobuf.Duration"),
            Type::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Type::List(elem) => write!(f, "list({elem})"),
            Type::Map(key, value) => write!(f, "map({key}, {value})"),
            Type::Object(object) => f.write_str(&object.name),
            Type::Optional(inner) => write!(f, "optional_type({inner})"),
            Type::Type(inner) => write!(f, "type({inner})"),
            Type::Opaque(name) | Type::Param(name) => f.write_str(name),
            Type::Error => f.write_str("*error*"),
        }
    }
}
