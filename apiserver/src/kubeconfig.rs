//! The admin kubeconfig an API server writes for its users.

use base64::Engine as _;

/// A kubeconfig with one cluster, one user (bearer token) and one context, all named `name`.
pub fn render(name: &str, server: &str, ca_pem: &str, token: &str) -> String {
    with_user(
        name,
        server,
        ca_pem,
        &format!("{name}-admin"),
        &format!("token: {token}"),
    )
}

/// A kubeconfig whose user `user` authenticates with a client certificate (PEM) and its key.
pub fn render_certificate(
    name: &str,
    server: &str,
    ca_pem: &str,
    user: &str,
    cert_pem: &str,
    key_pem: &str,
) -> String {
    let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let credentials = format!(
        "client-certificate-data: {}\n    client-key-data: {}",
        encode(cert_pem),
        encode(key_pem)
    );
    // The user's name is quoted: it may hold characters YAML reads otherwise (`:`, `@`).
    let quoted = serde_json::to_string(user).unwrap_or_default();
    with_user(name, server, ca_pem, &quoted, &credentials)
}

fn with_user(name: &str, server: &str, ca_pem: &str, user: &str, credentials: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: {name}
  cluster:
    server: {server}
    certificate-authority-data: {ca}
users:
- name: {user}
  user:
    {credentials}
contexts:
- name: {name}
  context:
    cluster: {name}
    user: {user}
current-context: {name}
"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn renders_a_parsable_kubeconfig() {
        let text = super::render("atoll", "https://127.0.0.1:6443", "PEM", "tok");
        let value: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(value["current-context"], "atoll");
        assert_eq!(value["users"][0]["user"]["token"], "tok");
        assert_eq!(
            value["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:6443"
        );
        let text =
            super::render_certificate("hub", "https://h:1", "CA", "alice@x: y", "CERT", "KEY");
        let value: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
        assert_eq!(value["users"][0]["name"], "alice@x: y");
        assert_eq!(value["contexts"][0]["context"]["user"], "alice@x: y");
        assert_eq!(value["users"][0]["user"]["client-key-data"], "S0VZ");
    }
}
