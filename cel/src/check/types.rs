//! The checker's working types: [`Type`] plus free type variables, with cel-go's assignability
//! (unification where `dyn` is assignable to and from anything), most-general joins,
//! substitution and the way cel-go prints types in its messages.

use std::collections::HashMap;
use std::sync::Arc;

use crate::types::{ObjectType, Type};

/// A type during checking: like [`Type`], plus `Var`, a free type variable (`_var0`) that
/// unification binds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ty {
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
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Object(Arc<ObjectType>),
    Optional(Box<Ty>),
    Type(Box<Ty>),
    Opaque(&'static str),
    Var(u32),
    Error,
}

impl Ty {
    /// The working type of a declared type; a declaration's type parameter is `dyn` here
    /// (overloads instantiate their parameters with fresh variables instead).
    pub(crate) fn from_type(t: &Type) -> Ty {
        match t {
            Type::Dyn | Type::Param(_) => Ty::Dyn,
            Type::Null => Ty::Null,
            Type::Bool => Ty::Bool,
            Type::Int => Ty::Int,
            Type::Uint => Ty::Uint,
            Type::Double => Ty::Double,
            Type::String => Ty::String,
            Type::Bytes => Ty::Bytes,
            Type::Duration => Ty::Duration,
            Type::Timestamp => Ty::Timestamp,
            Type::List(e) => Ty::List(Box::new(Ty::from_type(e))),
            Type::Map(k, v) => Ty::Map(Box::new(Ty::from_type(k)), Box::new(Ty::from_type(v))),
            Type::Object(o) => Ty::Object(o.clone()),
            Type::Optional(i) => Ty::Optional(Box::new(Ty::from_type(i))),
            Type::Type(i) => Ty::Type(Box::new(Ty::from_type(i))),
            Type::Opaque(n) => Ty::Opaque(n),
            Type::Error => Ty::Error,
        }
    }

    /// The public type; free variables are `dyn` (call after [`Mapping::substitute`]).
    pub(crate) fn to_type(&self) -> Type {
        match self {
            Ty::Dyn | Ty::Var(_) => Type::Dyn,
            Ty::Null => Type::Null,
            Ty::Bool => Type::Bool,
            Ty::Int => Type::Int,
            Ty::Uint => Type::Uint,
            Ty::Double => Type::Double,
            Ty::String => Type::String,
            Ty::Bytes => Type::Bytes,
            Ty::Duration => Type::Duration,
            Ty::Timestamp => Type::Timestamp,
            Ty::List(e) => Type::List(Box::new(e.to_type())),
            Ty::Map(k, v) => Type::Map(Box::new(k.to_type()), Box::new(v.to_type())),
            Ty::Object(o) => Type::Object(o.clone()),
            Ty::Optional(i) => Type::Optional(Box::new(i.to_type())),
            Ty::Type(i) => Type::Type(Box::new(i.to_type())),
            Ty::Opaque(n) => Type::Opaque(n),
            Ty::Error => Type::Error,
        }
    }

    pub(crate) fn is_dyn_or_error(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::Error)
    }

    /// The parameters of a parameterized type, and a tag naming its kind.
    fn params(&self) -> Option<(&'static str, Vec<&Ty>)> {
        match self {
            Ty::List(e) => Some(("list", vec![&**e])),
            Ty::Map(k, v) => Some(("map", vec![&**k, &**v])),
            Ty::Optional(i) => Some(("optional_type", vec![&**i])),
            Ty::Type(i) => Some(("type", vec![&**i])),
            _ => None,
        }
    }

    /// cel-go's `IsEquivalentType`: the same kind, name and (recursively) parameters.
    pub(crate) fn equivalent(&self, other: &Ty) -> bool {
        match (self.params(), other.params()) {
            (Some((a, pa)), Some((b, pb))) => {
                a == b && pa.len() == pb.len() && pa.iter().zip(pb).all(|(x, y)| x.equivalent(y))
            }
            (None, None) => match (self, other) {
                (Ty::Object(a), Ty::Object(b)) => a.name == b.name,
                _ => self == other,
            },
            _ => false,
        }
    }
}

/// Prints a type as cel-go's checker messages do (`FormatCELType`): `duration`, `timestamp`,
/// `null`, `list(int)`, `optional_type(string)`, `!error!`, a free type variable `_var0`.
pub(crate) fn format(t: &Ty) -> String {
    match t {
        Ty::Dyn => "dyn".to_string(),
        Ty::Var(n) => format!("_var{n}"),
        Ty::Null => "null".to_string(),
        Ty::Duration => "duration".to_string(),
        Ty::Timestamp => "timestamp".to_string(),
        Ty::Error => "!error!".to_string(),
        Ty::Object(o) => o.name.clone(),
        Ty::Opaque(n) => (*n).to_string(),
        Ty::List(e) => format!("list({})", format(e)),
        Ty::Map(k, v) => format!("map({}, {})", format(k), format(v)),
        Ty::Optional(i) => format!("optional_type({})", format(i)),
        Ty::Type(i) => format!("type({})", format(i)),
        other => other.to_type().to_string(),
    }
}

/// Bindings of type variables, as cel-go's `mapping`. A failed assignability test undoes
/// what it bound (cel-go copies the mapping instead, which is quadratic in large expressions).
#[derive(Clone, Debug, Default)]
pub(crate) struct Mapping {
    bindings: HashMap<u32, Ty>,
    /// The previous binding of each variable bound since the current test began.
    undo: Vec<(u32, Option<Ty>)>,
}

impl Mapping {
    fn find(&self, var: u32) -> Option<&Ty> {
        self.bindings.get(&var)
    }

    fn add(&mut self, var: u32, t: Ty) {
        let previous = self.bindings.insert(var, t);
        self.undo.push((var, previous));
    }

    fn rollback(&mut self) {
        while let Some((var, previous)) = self.undo.pop() {
            match previous {
                Some(t) => self.bindings.insert(var, t),
                None => self.bindings.remove(&var),
            };
        }
    }

    /// `t` with bound variables replaced; with `var_to_dyn`, free ones become `dyn`.
    pub(crate) fn substitute(&self, t: &Ty, var_to_dyn: bool) -> Ty {
        match t {
            Ty::Var(v) => match self.find(*v) {
                Some(bound) => self.substitute(bound, var_to_dyn),
                None if var_to_dyn => Ty::Dyn,
                None => t.clone(),
            },
            Ty::List(e) => Ty::List(Box::new(self.substitute(e, var_to_dyn))),
            Ty::Map(k, v) => Ty::Map(
                Box::new(self.substitute(k, var_to_dyn)),
                Box::new(self.substitute(v, var_to_dyn)),
            ),
            Ty::Optional(i) => Ty::Optional(Box::new(self.substitute(i, var_to_dyn))),
            Ty::Type(i) => Ty::Type(Box::new(self.substitute(i, var_to_dyn))),
            other => other.clone(),
        }
    }

    /// Whether `t1` accepts a value of type `t2`, binding variables on success (and leaving
    /// the mapping untouched on failure), as cel-go's `isAssignable`.
    pub(crate) fn assignable(&mut self, t1: &Ty, t2: &Ty) -> bool {
        self.undo.clear();
        let ok = self.internal_assignable(t1, t2);
        if !ok {
            self.rollback();
        }
        self.undo.clear();
        ok
    }

    /// Pairwise [`Mapping::assignable`] of two lists of the same length.
    pub(crate) fn assignable_list(&mut self, l1: &[Ty], l2: &[Ty]) -> bool {
        if l1.len() != l2.len() {
            return false;
        }
        self.undo.clear();
        let ok = l1
            .iter()
            .zip(l2)
            .all(|(a, b)| self.internal_assignable(a, b));
        if !ok {
            self.rollback();
        }
        self.undo.clear();
        ok
    }

    fn internal_assignable(&mut self, t1: &Ty, t2: &Ty) -> bool {
        if let Ty::Var(v2) = t2 {
            let (valid, has_sub) = self.valid_substitution(t1, *v2, t2);
            if valid {
                return true;
            }
            if has_sub {
                return false;
            }
        }
        if let Ty::Var(v1) = t1 {
            return self.valid_substitution(t2, *v1, t1).0;
        }
        if t1.is_dyn_or_error() || t2.is_dyn_or_error() {
            return true;
        }
        if *t1 == Ty::Null {
            return legacy_nullable(t2);
        }
        if *t2 == Ty::Null {
            return legacy_nullable(t1);
        }
        if t1.equivalent(t2) {
            return true;
        }
        match (t1.params(), t2.params()) {
            // Any type value is assignable to any other (cel-go: `TypeKind`).
            _ if matches!((t1, t2), (Ty::Type(_), Ty::Type(_))) => true,
            (Some((a, pa)), Some((b, pb))) if a == b && pa.len() == pb.len() => pa
                .iter()
                .zip(pb)
                .all(|(x, y)| self.internal_assignable(x, y)),
            _ => false,
        }
    }

    /// Whether `t` may stand for variable `var` (`var_ty`); the second value says whether
    /// `var` was already bound.
    fn valid_substitution(&mut self, t: &Ty, var: u32, var_ty: &Ty) -> (bool, bool) {
        if t == var_ty {
            return (true, true);
        }
        if let Some(sub) = self.find(var).cloned() {
            if *t == sub {
                return (true, true);
            }
            if self.internal_assignable(t, &sub) {
                let general = most_general(t, &sub);
                if !self.referenced_in(var, &general) {
                    self.add(var, general);
                }
                return (true, true);
            }
            return (false, true);
        }
        if !self.referenced_in(var, t) {
            self.add(var, t.clone());
            return (true, false);
        }
        (false, false)
    }

    /// Whether variable `var` occurs in `t` (through bindings too).
    fn referenced_in(&self, var: u32, t: &Ty) -> bool {
        self.referenced_in_depth(var, t, 0)
    }

    fn referenced_in_depth(&self, var: u32, t: &Ty, depth: usize) -> bool {
        if depth > self.bindings.len() + 64 {
            return true;
        }
        match t {
            Ty::Var(v) if *v == var => true,
            Ty::Var(v) => self
                .find(*v)
                .is_some_and(|b| self.referenced_in_depth(var, b, depth + 1)),
            other => other.params().is_some_and(|(_, ps)| {
                ps.iter()
                    .any(|p| self.referenced_in_depth(var, p, depth + 1))
            }),
        }
    }
}

/// What `null` may be assigned to (cel-go `internalIsAssignableNull`).
fn legacy_nullable(t: &Ty) -> bool {
    matches!(
        t,
        Ty::Null | Ty::Opaque(_) | Ty::Optional(_) | Ty::Object(_) | Ty::Duration | Ty::Timestamp
    )
}

/// The less specific of two assignable types (cel-go's `mostGeneral`).
pub(crate) fn most_general(t1: &Ty, t2: &Ty) -> Ty {
    if less_specific(t1, t2) {
        t1.clone()
    } else {
        t2.clone()
    }
}

fn less_specific(t1: &Ty, t2: &Ty) -> bool {
    if matches!(t1, Ty::Dyn | Ty::Var(_)) {
        return true;
    }
    if matches!(t2, Ty::Dyn | Ty::Var(_)) {
        return false;
    }
    match (t1.params(), t2.params()) {
        _ if matches!((t1, t2), (Ty::Type(_), Ty::Type(_))) => true,
        (Some((a, pa)), Some((b, pb))) => {
            a == b && pa.len() == pb.len() && pa.iter().zip(pb).all(|(x, y)| less_specific(x, y))
        }
        (None, None) => t1.equivalent(t2),
        _ => false,
    }
}
