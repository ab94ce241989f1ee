//! The printer of custom resources: Name, then the CRD version's `additionalPrinterColumns`
//! (or Age when it declares none), as apiextensions-apiserver's table convertor renders them.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::builtin::{CREATION_DOC, NAME_DOC};
use super::jsonpath::JsonPath;
use super::{Column, Row, age};

/// The columns of one custom resource version, with their parsed paths.
#[derive(Debug, Clone)]
pub struct CustomPrinter {
    columns: Vec<Column>,
    paths: Vec<JsonPath>,
}

impl CustomPrinter {
    /// Builds the printer from a CRD version's `additionalPrinterColumns`. Without any, the
    /// columns are Name and Age. A column whose `jsonPath` does not parse ends the list there,
    /// as upstream keeps the columns it had built when it met the bad one.
    pub fn new(printer_columns: &[Value]) -> Self {
        let age_only;
        let declared = if printer_columns.is_empty() {
            age_only = [json!({
                "name": "Age",
                "type": "date",
                "description": CREATION_DOC,
                "jsonPath": ".metadata.creationTimestamp",
            })];
            &age_only[..]
        } else {
            printer_columns
        };
        let mut columns = vec![Column::new("Name", "string", "name", NAME_DOC, 0)];
        let mut paths = Vec::new();
        for declared in declared {
            let json_path = declared["jsonPath"].as_str().unwrap_or_default();
            let Ok(path) = JsonPath::parse(json_path) else {
                break;
            };
            let description = match declared["description"].as_str() {
                Some(d) if !d.is_empty() => d.to_owned(),
                _ => format!("Custom resource definition column (in JSONPath format): {json_path}"),
            };
            columns.push(Column::new(
                declared["name"].as_str().unwrap_or_default(),
                declared["type"].as_str().unwrap_or_default(),
                declared["format"].as_str().unwrap_or_default(),
                &description,
                declared["priority"].as_i64().unwrap_or_default(),
            ));
            paths.push(path);
        }
        CustomPrinter { columns, paths }
    }

    /// The column definitions.
    pub fn columns(&self) -> Vec<Column> {
        self.columns.clone()
    }

    /// One object's row: its name, then each column's value (`null` where the path selects
    /// nothing or the value does not fit the column's type).
    pub fn row(&self, object: &Value, now: Timestamp) -> Row {
        let mut cells = Vec::with_capacity(self.columns.len());
        cells.push(json!(
            object["metadata"]["name"].as_str().unwrap_or_default()
        ));
        for (path, column) in self.paths.iter().zip(&self.columns[1..]) {
            let cell = match path.first(object) {
                Some(value) => cell(&column.ty, value, now),
                None => Value::Null,
            };
            cells.push(cell);
        }
        Row {
            cells,
            conditions: Vec::new(),
        }
    }
}

/// A value as a cell of a column of type `ty` (upstream's `cellForJSONValue`; string columns
/// print the value as client-go's JSONPath prints it).
fn cell(ty: &str, value: &Value, now: Timestamp) -> Value {
    match (ty, value) {
        (_, Value::Null) => Value::Null,
        ("string", value) => json!(print(value)),
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => json!(i),
            None => n.as_f64().map_or(Value::Null, |f| json!(f as i64)),
        },
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => json!(age::date_column(s, now)),
        _ => Value::Null,
    }
}

/// How client-go's JSONPath prints a value: strings bare, maps and lists as compact JSON,
/// numbers as Go's `%v`.
fn print(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_f64() => n.as_f64().map_or_else(|| n.to_string(), go_float),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => String::new(),
        Value::Array(_) | Value::Object(_) => value.to_string(),
    }
}

/// A float as Go's `%v` prints it: shortest digits, in exponent form (`1e+21`, `1.5e-05`) when
/// the decimal exponent is below -4 or at least 21.
fn go_float(f: f64) -> String {
    let scientific = format!("{f:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or_default();
    if (-4..21).contains(&exponent) {
        return f.to_string();
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_float_formatting() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(3.0), "3");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.000015), "1.5e-05");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1e20), "100000000000000000000");
    }

    #[test]
    fn cells_follow_column_types() {
        let now: Timestamp = "2025-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(cell("integer", &json!(2.9), now), json!(2));
        assert_eq!(cell("integer", &json!("2"), now), Value::Null);
        assert_eq!(cell("number", &json!(2), now), json!(2.0));
        assert_eq!(cell("boolean", &json!(true), now), json!(true));
        assert_eq!(cell("boolean", &json!("true"), now), Value::Null);
        assert_eq!(cell("string", &json!(3), now), json!("3"));
        assert_eq!(
            cell("string", &json!({"b": 1, "a": [true]}), now),
            json!(r#"{"a":[true],"b":1}"#)
        );
        assert_eq!(
            cell("date", &json!("2024-12-31T23:00:00Z"), now),
            json!("60m")
        );
        assert_eq!(cell("date", &json!("never"), now), json!("<invalid>"));
        assert_eq!(cell("string", &Value::Null, now), Value::Null);
    }

    #[test]
    fn a_bad_path_ends_the_columns() {
        let printer = CustomPrinter::new(&[
            json!({"name": "Size", "type": "integer", "jsonPath": ".spec.size"}),
            json!({"name": "Bad", "type": "string", "jsonPath": ".spec[oops"}),
            json!({"name": "Later", "type": "string", "jsonPath": ".spec.later"}),
        ]);
        let names: Vec<String> = printer.columns().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "Size"]);
    }
}
