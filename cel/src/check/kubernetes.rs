//! Declarations of the Kubernetes 1.35 CEL libraries (`k8s.io/apiserver/pkg/cel/library`:
//! lists, regex, urls, quantity, ip, cidr, format, semver, authz with its selectors) and of the
//! cel-go extensions its base environment enables (strings at version 2, sets, lists at
//! version 3, two-variable comprehensions). The authz functions are declared everywhere, as
//! upstream's base environment declares them; only admission declares a variable of their
//! types (`authorizer`, `authorizer.requestResource`).

use super::decls::Sig::{self, Bool, Bytes, Double, Duration, Dyn, Int, String, Timestamp, Uint};
use super::decls::{Overload, global, member};

/// `kubernetes.Quantity`.
pub const QUANTITY: Sig = Sig::Opaque("kubernetes.Quantity");
/// `net.IP`.
pub const IP: Sig = Sig::Opaque("net.IP");
/// `net.CIDR`.
pub const CIDR: Sig = Sig::Opaque("net.CIDR");
/// `kubernetes.URL`.
pub const URL: Sig = Sig::Opaque("kubernetes.URL");
/// `kubernetes.Semver`.
pub const SEMVER: Sig = Sig::Opaque("kubernetes.Semver");
/// `kubernetes.NamedFormat`.
pub const NAMED_FORMAT: Sig = Sig::Opaque("kubernetes.NamedFormat");
/// `kubernetes.authorization.Authorizer`.
pub const AUTHORIZER: Sig = Sig::Opaque(crate::library::authz::AUTHORIZER_TYPE);
/// `kubernetes.authorization.PathCheck`.
pub const PATH_CHECK: Sig = Sig::Opaque(crate::library::authz::PATH_CHECK_TYPE);
/// `kubernetes.authorization.GroupCheck`.
pub const GROUP_CHECK: Sig = Sig::Opaque(crate::library::authz::GROUP_CHECK_TYPE);
/// `kubernetes.authorization.ResourceCheck`.
pub const RESOURCE_CHECK: Sig = Sig::Opaque(crate::library::authz::RESOURCE_CHECK_TYPE);
/// `kubernetes.authorization.Decision`.
pub const DECISION: Sig = Sig::Opaque(crate::library::authz::DECISION_TYPE);

const A: Sig = Sig::Param("A");
const T: Sig = Sig::Param("T");
const LIST_A: Sig = Sig::List(&A);
const LIST_T: Sig = Sig::List(&T);
const LIST_STRING: Sig = Sig::List(&String);

/// Kubernetes' own libraries.
pub(crate) static OVERLOADS: &[Overload] = &[
    // lists
    member("list_a_index_of_int", "indexOf", &[LIST_A, A], Int),
    member("list_a_last_index_of_int", "lastIndexOf", &[LIST_A, A], Int),
    // regex
    member("string_find_string", "find", &[String, String], String),
    member(
        "string_find_all_string",
        "findAll",
        &[String, String],
        LIST_STRING,
    ),
    member(
        "string_find_all_string_int",
        "findAll",
        &[String, String, Int],
        LIST_STRING,
    ),
    // urls
    global("string_to_url", "url", &[String], URL),
    member("url_get_scheme", "getScheme", &[URL], String),
    member("url_get_host", "getHost", &[URL], String),
    member("url_get_hostname", "getHostname", &[URL], String),
    member("url_get_port", "getPort", &[URL], String),
    member("url_get_escaped_path", "getEscapedPath", &[URL], String),
    member(
        "url_get_query",
        "getQuery",
        &[URL],
        Sig::Map(&String, &LIST_STRING),
    ),
    global("is_url_string", "isURL", &[String], Bool),
    // quantity
    global("string_to_quantity", "quantity", &[String], QUANTITY),
    global("is_quantity_string", "isQuantity", &[String], Bool),
    // Declared global in Kubernetes (`sign(quantity(x))`), although documented as a method.
    global("quantity_sign", "sign", &[QUANTITY], Int),
    member(
        "quantity_is_greater_than",
        "isGreaterThan",
        &[QUANTITY, QUANTITY],
        Bool,
    ),
    member(
        "quantity_is_less_than",
        "isLessThan",
        &[QUANTITY, QUANTITY],
        Bool,
    ),
    member(
        "quantity_compare_to",
        "compareTo",
        &[QUANTITY, QUANTITY],
        Int,
    ),
    member(
        "quantity_get_float",
        "asApproximateFloat",
        &[QUANTITY],
        Double,
    ),
    member("quantity_get_int", "asInteger", &[QUANTITY], Int),
    member("quantity_is_integer", "isInteger", &[QUANTITY], Bool),
    member("quantity_add", "add", &[QUANTITY, QUANTITY], QUANTITY),
    member("quantity_add_int", "add", &[QUANTITY, Int], QUANTITY),
    member("quantity_sub", "sub", &[QUANTITY, QUANTITY], QUANTITY),
    member("quantity_sub_int", "sub", &[QUANTITY, Int], QUANTITY),
    // ip
    global("string_to_ip", "ip", &[String], IP),
    global("is_ip", "isIP", &[String], Bool),
    global("ip_is_canonical", "ip.isCanonical", &[String], Bool),
    member("ip_family", "family", &[IP], Int),
    member("ip_is_unspecified", "isUnspecified", &[IP], Bool),
    member("ip_is_loopback", "isLoopback", &[IP], Bool),
    member(
        "ip_is_link_local_multicast",
        "isLinkLocalMulticast",
        &[IP],
        Bool,
    ),
    member(
        "ip_is_link_local_unicast",
        "isLinkLocalUnicast",
        &[IP],
        Bool,
    ),
    member("ip_is_global_unicast", "isGlobalUnicast", &[IP], Bool),
    global("ip_to_string", "string", &[IP], String),
    // cidr
    global("string_to_cidr", "cidr", &[String], CIDR),
    global("is_cidr", "isCIDR", &[String], Bool),
    member(
        "cidr_contains_ip_string",
        "containsIP",
        &[CIDR, String],
        Bool,
    ),
    member("cidr_contains_ip_ip", "containsIP", &[CIDR, IP], Bool),
    member(
        "cidr_contains_cidr_string",
        "containsCIDR",
        &[CIDR, String],
        Bool,
    ),
    member("cidr_contains_cidr", "containsCIDR", &[CIDR, CIDR], Bool),
    member("cidr_ip", "ip", &[CIDR], IP),
    member("cidr_prefix_length", "prefixLength", &[CIDR], Int),
    member("cidr_masked", "masked", &[CIDR], CIDR),
    global("cidr_to_string", "string", &[CIDR], String),
    // format
    member(
        "format-validate",
        "validate",
        &[NAMED_FORMAT, String],
        Sig::Optional(&LIST_STRING),
    ),
    global(
        "format-named",
        "format.named",
        &[String],
        Sig::Optional(&NAMED_FORMAT),
    ),
    global(
        "format.dns1123Label",
        "format.dns1123Label",
        &[],
        NAMED_FORMAT,
    ),
    global(
        "format.dns1123Subdomain",
        "format.dns1123Subdomain",
        &[],
        NAMED_FORMAT,
    ),
    global(
        "format.dns1035Label",
        "format.dns1035Label",
        &[],
        NAMED_FORMAT,
    ),
    global(
        "format.qualifiedName",
        "format.qualifiedName",
        &[],
        NAMED_FORMAT,
    ),
    global(
        "format.dns1123LabelPrefix",
        "format.dns1123LabelPrefix",
        &[],
        NAMED_FORMAT,
    ),
    global(
        "format.dns1123SubdomainPrefix",
        "format.dns1123SubdomainPrefix",
        &[],
        NAMED_FORMAT,
    ),
    global(
        "format.dns1035LabelPrefix",
        "format.dns1035LabelPrefix",
        &[],
        NAMED_FORMAT,
    ),
    global("format.labelValue", "format.labelValue", &[], NAMED_FORMAT),
    global("format.uri", "format.uri", &[], NAMED_FORMAT),
    global("format.uuid", "format.uuid", &[], NAMED_FORMAT),
    global("format.byte", "format.byte", &[], NAMED_FORMAT),
    global("format.date", "format.date", &[], NAMED_FORMAT),
    global("format.datetime", "format.datetime", &[], NAMED_FORMAT),
    // semver (version 1)
    global("string_to_semver", "semver", &[String], SEMVER),
    global("string_bool_to_semver", "semver", &[String, Bool], SEMVER),
    global("is_semver_string", "isSemver", &[String], Bool),
    global("is_semver_string_bool", "isSemver", &[String, Bool], Bool),
    member(
        "semver_is_greater_than",
        "isGreaterThan",
        &[SEMVER, SEMVER],
        Bool,
    ),
    member("semver_is_less_than", "isLessThan", &[SEMVER, SEMVER], Bool),
    member("semver_compare_to", "compareTo", &[SEMVER, SEMVER], Int),
    member("semver_major", "major", &[SEMVER], Int),
    member("semver_minor", "minor", &[SEMVER], Int),
    member("semver_patch", "patch", &[SEMVER], Int),
    // authz
    member("authorizer_path", "path", &[AUTHORIZER, String], PATH_CHECK),
    member(
        "authorizer_group",
        "group",
        &[AUTHORIZER, String],
        GROUP_CHECK,
    ),
    member(
        "authorizer_serviceaccount",
        "serviceAccount",
        &[AUTHORIZER, String, String],
        AUTHORIZER,
    ),
    member(
        "groupcheck_resource",
        "resource",
        &[GROUP_CHECK, String],
        RESOURCE_CHECK,
    ),
    member(
        "resourcecheck_subresource",
        "subresource",
        &[RESOURCE_CHECK, String],
        RESOURCE_CHECK,
    ),
    member(
        "resourcecheck_namespace",
        "namespace",
        &[RESOURCE_CHECK, String],
        RESOURCE_CHECK,
    ),
    member(
        "resourcecheck_name",
        "name",
        &[RESOURCE_CHECK, String],
        RESOURCE_CHECK,
    ),
    member("pathcheck_check", "check", &[PATH_CHECK, String], DECISION),
    member(
        "resourcecheck_check",
        "check",
        &[RESOURCE_CHECK, String],
        DECISION,
    ),
    member("decision_errored", "errored", &[DECISION], Bool),
    member("decision_error", "error", &[DECISION], String),
    member("decision_allowed", "allowed", &[DECISION], Bool),
    member("decision_reason", "reason", &[DECISION], String),
    // authz selectors
    member(
        "authorizer_fieldselector",
        "fieldSelector",
        &[RESOURCE_CHECK, String],
        RESOURCE_CHECK,
    ),
    member(
        "authorizer_labelselector",
        "labelSelector",
        &[RESOURCE_CHECK, String],
        RESOURCE_CHECK,
    ),
];

const K: Sig = Sig::Param("K");
const V: Sig = Sig::Param("V");
const MAP_KV: Sig = Sig::Map(&K, &V);

/// cel-go's extensions: strings (version 2), sets, lists (version 3), and the two-variable
/// comprehensions' map insertion that `transformMap` and `transformMapEntry` expand to.
pub(crate) static EXTENSIONS: &[Overload] = &[
    global(
        "@mapInsert_map_key_value",
        "cel.@mapInsert",
        &[MAP_KV, K, V],
        MAP_KV,
    ),
    global(
        "@mapInsert_map_map",
        "cel.@mapInsert",
        &[MAP_KV, MAP_KV],
        MAP_KV,
    ),
    // strings
    member("string_char_at_int", "charAt", &[String, Int], String),
    member("string_index_of_string", "indexOf", &[String, String], Int),
    member(
        "string_index_of_string_int",
        "indexOf",
        &[String, String, Int],
        Int,
    ),
    member(
        "string_last_index_of_string",
        "lastIndexOf",
        &[String, String],
        Int,
    ),
    member(
        "string_last_index_of_string_int",
        "lastIndexOf",
        &[String, String, Int],
        Int,
    ),
    member("string_lower_ascii", "lowerAscii", &[String], String),
    member(
        "string_replace_string_string",
        "replace",
        &[String, String, String],
        String,
    ),
    member(
        "string_replace_string_string_int",
        "replace",
        &[String, String, String, Int],
        String,
    ),
    member(
        "string_split_string",
        "split",
        &[String, String],
        LIST_STRING,
    ),
    member(
        "string_split_string_int",
        "split",
        &[String, String, Int],
        LIST_STRING,
    ),
    member("string_substring_int", "substring", &[String, Int], String),
    member(
        "string_substring_int_int",
        "substring",
        &[String, Int, Int],
        String,
    ),
    member("string_trim", "trim", &[String], String),
    member("string_upper_ascii", "upperAscii", &[String], String),
    member(
        "string_format",
        "format",
        &[String, Sig::List(&Dyn)],
        String,
    ),
    global("strings_quote", "strings.quote", &[String], String),
    member("list_join", "join", &[LIST_STRING], String),
    member("list_join_string", "join", &[LIST_STRING, String], String),
    // sets
    global(
        "list_sets_contains_list",
        "sets.contains",
        &[LIST_T, LIST_T],
        Bool,
    ),
    global(
        "list_sets_equivalent_list",
        "sets.equivalent",
        &[LIST_T, LIST_T],
        Bool,
    ),
    global(
        "list_sets_intersects_list",
        "sets.intersects",
        &[LIST_T, LIST_T],
        Bool,
    ),
    // lists
    member("list_slice", "slice", &[LIST_T, Int, Int], LIST_T),
    member("list_flatten", "flatten", &[Sig::List(&LIST_T)], LIST_T),
    member(
        "list_flatten_int",
        "flatten",
        &[Sig::List(&Dyn), Int],
        Sig::List(&Dyn),
    ),
    global("lists_range", "lists.range", &[Int], Sig::List(&Int)),
    member("list_reverse", "reverse", &[LIST_T], LIST_T),
    member("list_distinct", "distinct", &[LIST_T], LIST_T),
];

/// Declares one overload per comparable (or summable) type, as Kubernetes' and cel-go's
/// templated overloads do; `$id` is a pattern of literal pieces around the type's name.
macro_rules! per_type {
    ($fn:literal, $( ($name:literal, $ty:expr, $id:expr) ),* $(,)?) => {
        [ $( member($id, $fn, &[Sig::List(&$ty)], $ty) ),* ]
    };
}

macro_rules! comparable {
    ($fn:literal, $pre:literal, $post:literal, same) => {
        per_type!(
            $fn,
            ("int", Int, concat!($pre, "int", $post, "int")),
            ("uint", Uint, concat!($pre, "uint", $post, "uint")),
            ("double", Double, concat!($pre, "double", $post, "double")),
            ("bool", Bool, concat!($pre, "bool", $post, "bool")),
            (
                "duration",
                Duration,
                concat!($pre, "duration", $post, "duration")
            ),
            (
                "timestamp",
                Timestamp,
                concat!($pre, "timestamp", $post, "timestamp")
            ),
            ("string", String, concat!($pre, "string", $post, "string")),
            ("bytes", Bytes, concat!($pre, "bytes", $post, "bytes")),
        )
    };
}

const MAX: [Overload; 8] = comparable!("max", "list_", "_max_", same);
const MIN: [Overload; 8] = comparable!("min", "list_", "_min_", same);

const SUM: [Overload; 4] = per_type!(
    "sum",
    ("int", Int, "list_int_sum_int"),
    ("uint", Uint, "list_uint_sum_uint"),
    ("double", Double, "list_double_sum_double"),
    ("duration", Duration, "list_duration_sum_duration"),
);

/// Declares a per-comparable-type overload whose result is fixed or the list itself.
macro_rules! per_comparable {
    ($fn:literal, $make:ident) => {
        [
            $make!($fn, "int", Int),
            $make!($fn, "uint", Uint),
            $make!($fn, "double", Double),
            $make!($fn, "bool", Bool),
            $make!($fn, "duration", Duration),
            $make!($fn, "timestamp", Timestamp),
            $make!($fn, "string", String),
            $make!($fn, "bytes", Bytes),
        ]
    };
}

macro_rules! is_sorted {
    ($fn:literal, $name:literal, $ty:expr) => {
        member(
            concat!("list_", $name, "_is_sorted_bool"),
            $fn,
            &[Sig::List(&$ty)],
            Bool,
        )
    };
}

const IS_SORTED: [Overload; 8] = per_comparable!("isSorted", is_sorted);

/// cel-go's lists extension names its templated overloads by the CEL type name.
macro_rules! per_cel_comparable {
    ($fn:literal, $make:ident) => {
        [
            $make!($fn, "int", Int),
            $make!($fn, "uint", Uint),
            $make!($fn, "double", Double),
            $make!($fn, "bool", Bool),
            $make!($fn, "google.protobuf.Duration", Duration),
            $make!($fn, "google.protobuf.Timestamp", Timestamp),
            $make!($fn, "string", String),
            $make!($fn, "bytes", Bytes),
        ]
    };
}

macro_rules! sort {
    ($fn:literal, $name:literal, $ty:expr) => {
        member(
            concat!("list_", $name, "_sort"),
            $fn,
            &[Sig::List(&$ty)],
            Sig::List(&$ty),
        )
    };
}

macro_rules! sort_by_keys {
    ($fn:literal, $name:literal, $ty:expr) => {
        member(
            concat!("list_", $name, "_sortByAssociatedKeys"),
            $fn,
            &[LIST_T, Sig::List(&$ty)],
            LIST_T,
        )
    };
}

const SORT: [Overload; 8] = per_cel_comparable!("sort", sort);
const SORT_BY_KEYS: [Overload; 8] = per_cel_comparable!("@sortByAssociatedKeys", sort_by_keys);

/// The overloads declared once per element type.
pub(crate) static TEMPLATED: [Overload; 44] = {
    let mut all = [IS_SORTED[0]; 44];
    let groups: [&[Overload]; 6] = [&IS_SORTED, &SUM, &MAX, &MIN, &SORT, &SORT_BY_KEYS];
    let mut n = 0;
    let mut g = 0;
    while g < groups.len() {
        let mut i = 0;
        while i < groups[g].len() {
            all[n] = groups[g][i];
            n += 1;
            i += 1;
        }
        g += 1;
    }
    all
};
