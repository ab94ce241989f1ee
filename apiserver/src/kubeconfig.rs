//! The admin kubeconfig an API server writes for its users.

use base64::Engine as _;

/// A kubeconfig with one cluster, one user (bearer token) and one context, all named `name`.
pub fn render(name: &str, server: &str, ca_pem: &str, token: &str) -> String {
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
- name: {name}-admin
  user:
    token: {token}
contexts:
- name: {name}
  context:
    cluster: {name}
    user: {name}-admin
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
    }
}
