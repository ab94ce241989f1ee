//! Output formats shared by the listing commands.

use clap::ValueEnum;

/// How a listing is printed.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns.
    Table,
    /// More columns.
    Wide,
    /// The objects as YAML.
    Yaml,
    /// The objects as JSON.
    Json,
}

/// Prints rows as aligned columns under a header.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}   ", width = widths[i]));
            }
        }
        out.trim_end().to_owned()
    };
    let mut out = line(header.to_vec());
    out.push('\n');
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

/// Prints `value` as YAML or JSON.
pub fn document<T: serde::Serialize>(value: &T, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Json => serde_json::to_string_pretty(value)? + "\n",
        _ => serde_yaml_ng::to_string(value)?,
    })
}

/// `kubectl`'s age: `45s`, `12m`, `5h`, `3d`.
pub fn age(created: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> String {
    let Some(created) = created else {
        return "<unknown>".to_owned();
    };
    let seconds = jiff::Timestamp::now()
        .duration_since(created.0)
        .as_secs()
        .max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_under_the_header() {
        let out = table(
            &["NAME", "AGE"],
            &[
                vec!["east".into(), "5s".into()],
                vec!["a".into(), "1m".into()],
            ],
        );
        assert_eq!(out, "NAME   AGE\neast   5s\na      1m\n");
    }
}
