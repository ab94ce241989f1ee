//! CEL's standard library declarations (cel-go `common/stdlib`), with the cross-type numeric
//! comparisons Kubernetes enables, and cel-go's optional library (`cel.OptionalTypes()`).

use super::decls::Sig::{self, Bool, Bytes, Double, Duration, Dyn, Int, String, Timestamp, Uint};
use super::decls::{Overload, global, member};

const A: Sig = Sig::Param("A");
const B: Sig = Sig::Param("B");
const V: Sig = Sig::Param("V");
const K: Sig = Sig::Param("K");
const LIST_A: Sig = Sig::List(&A);
const MAP_AB: Sig = Sig::Map(&A, &B);
const LIST_V: Sig = Sig::List(&V);
const MAP_KV: Sig = Sig::Map(&K, &V);
const OPT_V: Sig = Sig::Optional(&V);
const TYPE_A: Sig = Sig::Type(&A);

/// Declares the six ordering overloads of one comparison operator with cel-go's ids.
macro_rules! ordering {
    ($fn:literal, $p:literal) => {
        [
            global(concat!($p, "_bool"), $fn, &[Bool, Bool], Bool),
            global(concat!($p, "_int64"), $fn, &[Int, Int], Bool),
            global(concat!($p, "_int64_double"), $fn, &[Int, Double], Bool),
            global(concat!($p, "_int64_uint64"), $fn, &[Int, Uint], Bool),
            global(concat!($p, "_uint64"), $fn, &[Uint, Uint], Bool),
            global(concat!($p, "_uint64_double"), $fn, &[Uint, Double], Bool),
            global(concat!($p, "_uint64_int64"), $fn, &[Uint, Int], Bool),
            global(concat!($p, "_double"), $fn, &[Double, Double], Bool),
            global(concat!($p, "_double_int64"), $fn, &[Double, Int], Bool),
            global(concat!($p, "_double_uint64"), $fn, &[Double, Uint], Bool),
            global(concat!($p, "_string"), $fn, &[String, String], Bool),
            global(concat!($p, "_bytes"), $fn, &[Bytes, Bytes], Bool),
            global(
                concat!($p, "_timestamp"),
                $fn,
                &[Timestamp, Timestamp],
                Bool,
            ),
            global(concat!($p, "_duration"), $fn, &[Duration, Duration], Bool),
        ]
    };
}

const LESS: [Overload; 14] = ordering!("_<_", "less");
const LESS_EQUALS: [Overload; 14] = ordering!("_<=_", "less_equals");
const GREATER: [Overload; 14] = ordering!("_>_", "greater");
const GREATER_EQUALS: [Overload; 14] = ordering!("_>=_", "greater_equals");

/// The ordering operators `<`, `<=`, `>`, `>=`.
pub(crate) static ORDERING: [[Overload; 14]; 4] = [LESS, LESS_EQUALS, GREATER, GREATER_EQUALS];

/// Declares a timestamp accessor with and without a time zone argument.
macro_rules! accessor {
    ($fn:literal, $id:literal, $tz:literal) => {
        [
            member($id, $fn, &[Timestamp], Int),
            member($tz, $fn, &[Timestamp, String], Int),
        ]
    };
}

const YEAR: [Overload; 2] = accessor!(
    "getFullYear",
    "timestamp_to_year",
    "timestamp_to_year_with_tz"
);
const MONTH: [Overload; 2] = accessor!(
    "getMonth",
    "timestamp_to_month",
    "timestamp_to_month_with_tz"
);
const DAY_OF_YEAR: [Overload; 2] = accessor!(
    "getDayOfYear",
    "timestamp_to_day_of_year",
    "timestamp_to_day_of_year_with_tz"
);
const DAY_OF_MONTH: [Overload; 2] = accessor!(
    "getDayOfMonth",
    "timestamp_to_day_of_month",
    "timestamp_to_day_of_month_with_tz"
);
const DATE: [Overload; 2] = accessor!(
    "getDate",
    "timestamp_to_day_of_month_1_based",
    "timestamp_to_day_of_month_1_based_with_tz"
);
const DAY_OF_WEEK: [Overload; 2] = accessor!(
    "getDayOfWeek",
    "timestamp_to_day_of_week",
    "timestamp_to_day_of_week_with_tz"
);
const HOURS: [Overload; 2] = accessor!(
    "getHours",
    "timestamp_to_hours",
    "timestamp_to_hours_with_tz"
);
const MINUTES: [Overload; 2] = accessor!(
    "getMinutes",
    "timestamp_to_minutes",
    "timestamp_to_minutes_with_tz"
);
const SECONDS: [Overload; 2] = accessor!(
    "getSeconds",
    "timestamp_to_seconds",
    "timestamp_to_seconds_tz"
);
const MILLISECONDS: [Overload; 2] = accessor!(
    "getMilliseconds",
    "timestamp_to_milliseconds",
    "timestamp_to_milliseconds_with_tz"
);

/// The timestamp accessors.
pub(crate) static TIMESTAMP_ACCESSORS: [[Overload; 2]; 10] = [
    YEAR,
    MONTH,
    DAY_OF_YEAR,
    DAY_OF_MONTH,
    DATE,
    DAY_OF_WEEK,
    HOURS,
    MINUTES,
    SECONDS,
    MILLISECONDS,
];

/// The standard library's other overloads, in cel-go's order.
pub(crate) static OVERLOADS: &[Overload] = &[
    global("conditional", "_?_:_", &[Bool, A, A], A),
    global("logical_and", "_&&_", &[Bool, Bool], Bool),
    global("logical_or", "_||_", &[Bool, Bool], Bool),
    global("logical_not", "!_", &[Bool], Bool),
    global("not_strictly_false", "@not_strictly_false", &[Bool], Bool),
    global(
        "not_strictly_false",
        "__not_strictly_false__",
        &[Bool],
        Bool,
    ),
    global("equals", "_==_", &[A, A], Bool),
    global("not_equals", "_!=_", &[A, A], Bool),
    global("add_bytes", "_+_", &[Bytes, Bytes], Bytes),
    global("add_double", "_+_", &[Double, Double], Double),
    global(
        "add_duration_duration",
        "_+_",
        &[Duration, Duration],
        Duration,
    ),
    global(
        "add_duration_timestamp",
        "_+_",
        &[Duration, Timestamp],
        Timestamp,
    ),
    global(
        "add_timestamp_duration",
        "_+_",
        &[Timestamp, Duration],
        Timestamp,
    ),
    global("add_int64", "_+_", &[Int, Int], Int),
    global("add_list", "_+_", &[LIST_A, LIST_A], LIST_A),
    global("add_string", "_+_", &[String, String], String),
    global("add_uint64", "_+_", &[Uint, Uint], Uint),
    global("divide_double", "_/_", &[Double, Double], Double),
    global("divide_int64", "_/_", &[Int, Int], Int),
    global("divide_uint64", "_/_", &[Uint, Uint], Uint),
    global("modulo_int64", "_%_", &[Int, Int], Int),
    global("modulo_uint64", "_%_", &[Uint, Uint], Uint),
    global("multiply_double", "_*_", &[Double, Double], Double),
    global("multiply_int64", "_*_", &[Int, Int], Int),
    global("multiply_uint64", "_*_", &[Uint, Uint], Uint),
    global("negate_double", "-_", &[Double], Double),
    global("negate_int64", "-_", &[Int], Int),
    global("subtract_double", "_-_", &[Double, Double], Double),
    global(
        "subtract_duration_duration",
        "_-_",
        &[Duration, Duration],
        Duration,
    ),
    global("subtract_int64", "_-_", &[Int, Int], Int),
    global(
        "subtract_timestamp_duration",
        "_-_",
        &[Timestamp, Duration],
        Timestamp,
    ),
    global(
        "subtract_timestamp_timestamp",
        "_-_",
        &[Timestamp, Timestamp],
        Duration,
    ),
    global("subtract_uint64", "_-_", &[Uint, Uint], Uint),
    global("index_list", "_[_]", &[LIST_A, Int], A),
    global("index_map", "_[_]", &[MAP_AB, A], B),
    global("in_list", "@in", &[A, LIST_A], Bool),
    global("in_map", "@in", &[A, MAP_AB], Bool),
    global("size_bytes", "size", &[Bytes], Int),
    member("bytes_size", "size", &[Bytes], Int),
    global("size_list", "size", &[LIST_A], Int),
    member("list_size", "size", &[LIST_A], Int),
    global("size_map", "size", &[MAP_AB], Int),
    member("map_size", "size", &[MAP_AB], Int),
    global("size_string", "size", &[String], Int),
    member("string_size", "size", &[String], Int),
    global("type", "type", &[A], TYPE_A),
    global("bool_to_bool", "bool", &[Bool], Bool),
    global("string_to_bool", "bool", &[String], Bool),
    global("bytes_to_bytes", "bytes", &[Bytes], Bytes),
    global("string_to_bytes", "bytes", &[String], Bytes),
    global("double_to_double", "double", &[Double], Double),
    global("int64_to_double", "double", &[Int], Double),
    global("string_to_double", "double", &[String], Double),
    global("uint64_to_double", "double", &[Uint], Double),
    global("duration_to_duration", "duration", &[Duration], Duration),
    global("string_to_duration", "duration", &[String], Duration),
    global("to_dyn", "dyn", &[A], Dyn),
    global("int64_to_int64", "int", &[Int], Int),
    global("double_to_int64", "int", &[Double], Int),
    global("duration_to_int64", "int", &[Duration], Int),
    global("string_to_int64", "int", &[String], Int),
    global("timestamp_to_int64", "int", &[Timestamp], Int),
    global("uint64_to_int64", "int", &[Uint], Int),
    global("string_to_string", "string", &[String], String),
    global("bool_to_string", "string", &[Bool], String),
    global("bytes_to_string", "string", &[Bytes], String),
    global("double_to_string", "string", &[Double], String),
    global("duration_to_string", "string", &[Duration], String),
    global("int64_to_string", "string", &[Int], String),
    global("timestamp_to_string", "string", &[Timestamp], String),
    global("uint64_to_string", "string", &[Uint], String),
    global(
        "timestamp_to_timestamp",
        "timestamp",
        &[Timestamp],
        Timestamp,
    ),
    global("int64_to_timestamp", "timestamp", &[Int], Timestamp),
    global("string_to_timestamp", "timestamp", &[String], Timestamp),
    global("uint64_to_uint64", "uint", &[Uint], Uint),
    global("double_to_uint64", "uint", &[Double], Uint),
    global("int64_to_uint64", "uint", &[Int], Uint),
    global("string_to_uint64", "uint", &[String], Uint),
    member("contains_string", "contains", &[String, String], Bool),
    member("ends_with_string", "endsWith", &[String, String], Bool),
    member("starts_with_string", "startsWith", &[String, String], Bool),
    global("matches", "matches", &[String, String], Bool),
    member("matches_string", "matches", &[String, String], Bool),
    member("duration_to_hours", "getHours", &[Duration], Int),
    member("duration_to_minutes", "getMinutes", &[Duration], Int),
    member("duration_to_seconds", "getSeconds", &[Duration], Int),
    member(
        "duration_to_milliseconds",
        "getMilliseconds",
        &[Duration],
        Int,
    ),
];

/// cel-go's optional library at its latest version (Kubernetes enables `cel.OptionalTypes()`
/// without a version).
pub(crate) static OPTIONAL: &[Overload] = &[
    global("optional_of", "optional.of", &[V], OPT_V),
    global(
        "optional_ofNonZeroValue",
        "optional.ofNonZeroValue",
        &[V],
        OPT_V,
    ),
    global("optional_none", "optional.none", &[], OPT_V),
    member("optional_value", "value", &[OPT_V], V),
    member("optional_hasValue", "hasValue", &[OPT_V], Bool),
    member("optional_or_optional", "or", &[OPT_V, OPT_V], OPT_V),
    member("optional_orValue_value", "orValue", &[OPT_V, V], V),
    global("list_optindex_optional_int", "_[?_]", &[LIST_V, Int], OPT_V),
    global(
        "optional_list_optindex_optional_int",
        "_[?_]",
        &[Sig::Optional(&LIST_V), Int],
        OPT_V,
    ),
    global("map_optindex_optional_value", "_[?_]", &[MAP_KV, K], OPT_V),
    global(
        "optional_map_optindex_optional_value",
        "_[?_]",
        &[Sig::Optional(&MAP_KV), K],
        OPT_V,
    ),
    global(
        "optional_list_index_int",
        "_[_]",
        &[Sig::Optional(&LIST_V), Int],
        OPT_V,
    ),
    global(
        "optional_map_index_value",
        "_[_]",
        &[Sig::Optional(&MAP_KV), K],
        OPT_V,
    ),
    member("list_last", "last", &[LIST_V], OPT_V),
    member("list_first", "first", &[LIST_V], OPT_V),
    global(
        "optional_unwrap",
        "optional.unwrap",
        &[Sig::List(&OPT_V)],
        LIST_V,
    ),
    member(
        "optional_unwrapOpt",
        "unwrapOpt",
        &[Sig::List(&OPT_V)],
        LIST_V,
    ),
];
