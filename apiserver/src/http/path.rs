//! Parsing Kubernetes URL paths, as apiserver's `RequestInfoFactory` does.

/// What a URL path addresses.
#[derive(Debug, PartialEq, Eq)]
pub enum ApiPath {
    Version,
    Health,
    /// `/openapi/v2`: the Swagger 2.0 document of every resource.
    OpenApiV2,
    /// `/openapi/v3`
    OpenApiIndex,
    /// `/openapi/v3/<api/v1 | apis/group/version>`
    OpenApiDocument(String),
    /// `/api`
    CoreRoot,
    /// `/apis`
    GroupsRoot,
    /// `/apis/<group>`
    Group(String),
    /// `/api/v1` or `/apis/<group>/<version>`
    GroupVersion(String, String),
    Resource(ResourcePath),
    /// `/atoll/v1/backup`: the cluster's backup.
    Backup,
    /// `/atoll/v1/restore`: where a backup is uploaded into a cluster waiting for one.
    Restore,
}

/// The path of a cluster's backup.
pub const BACKUP: &str = "/atoll/v1/backup";
/// The path a backup is restored through.
pub const RESTORE: &str = "/atoll/v1/restore";

/// A resource URL: collection, object or subresource.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// Parses a path, or `None` for a path the server does not serve.
pub fn parse(path: &str) -> Option<ApiPath> {
    match path {
        "/version" | "/version/" => return Some(ApiPath::Version),
        "/healthz" | "/livez" | "/readyz" => return Some(ApiPath::Health),
        "/openapi/v2" => return Some(ApiPath::OpenApiV2),
        "/openapi/v3" | "/openapi/v3/" => return Some(ApiPath::OpenApiIndex),
        BACKUP => return Some(ApiPath::Backup),
        RESTORE => return Some(ApiPath::Restore),
        _ => {}
    }
    if let Some(doc) = path.strip_prefix("/openapi/v3/") {
        return Some(ApiPath::OpenApiDocument(
            doc.trim_end_matches('/').to_owned(),
        ));
    }
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api"] => return Some(ApiPath::CoreRoot),
        ["apis"] => return Some(ApiPath::GroupsRoot),
        ["apis", group] => return Some(ApiPath::Group((*group).to_owned())),
        ["api", version] => {
            return Some(ApiPath::GroupVersion(String::new(), (*version).to_owned()));
        }
        ["apis", group, version] => {
            return Some(ApiPath::GroupVersion(
                (*group).to_owned(),
                (*version).to_owned(),
            ));
        }
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    if rest.iter().any(|s| s.is_empty()) {
        return None;
    }
    let mut at = ResourcePath {
        group: group.to_owned(),
        version: version.to_owned(),
        ..Default::default()
    };
    let owned = |s: &&str| Some((*s).to_owned());
    match rest {
        [resource] => at.resource = (*resource).to_owned(),
        [resource, name] => {
            at.resource = (*resource).to_owned();
            at.name = owned(name);
        }
        // The namespace object itself and its subresources.
        ["namespaces", name, sub @ ("status" | "finalize")] if group.is_empty() => {
            at.resource = "namespaces".into();
            at.name = owned(name);
            at.subresource = owned(sub);
        }
        ["namespaces", ns, resource] => {
            at.namespace = owned(ns);
            at.resource = (*resource).to_owned();
        }
        [resource, name, sub] => {
            at.resource = (*resource).to_owned();
            at.name = owned(name);
            at.subresource = owned(sub);
        }
        ["namespaces", ns, resource, name] => {
            at.namespace = owned(ns);
            at.resource = (*resource).to_owned();
            at.name = owned(name);
        }
        ["namespaces", ns, resource, name, sub] => {
            at.namespace = owned(ns);
            at.resource = (*resource).to_owned();
            at.name = owned(name);
            at.subresource = owned(sub);
        }
        _ => return None,
    }
    Some(ApiPath::Resource(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(path: &str) -> ResourcePath {
        match parse(path) {
            Some(ApiPath::Resource(r)) => r,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn parses_kubernetes_paths() {
        assert_eq!(parse("/version/"), Some(ApiPath::Version));
        assert_eq!(parse("/api"), Some(ApiPath::CoreRoot));
        assert_eq!(parse("/apis/"), Some(ApiPath::GroupsRoot));
        assert_eq!(
            parse("/api/v1"),
            Some(ApiPath::GroupVersion("".into(), "v1".into()))
        );
        assert_eq!(
            parse("/apis/apps/v1"),
            Some(ApiPath::GroupVersion("apps".into(), "v1".into()))
        );
        assert_eq!(parse("/apis/apps"), Some(ApiPath::Group("apps".into())));
        assert_eq!(parse("/nope"), None);
        assert_eq!(parse("/atoll/v1/backup"), Some(ApiPath::Backup));
        assert_eq!(parse("/atoll/v1/restore"), Some(ApiPath::Restore));
        assert_eq!(parse("/openapi/v2"), Some(ApiPath::OpenApiV2));
        assert_eq!(parse("/openapi/v2/"), None);

        let ns = resource("/api/v1/namespaces/default");
        assert_eq!(
            (ns.resource.as_str(), ns.name.as_deref(), ns.namespace),
            ("namespaces", Some("default"), None)
        );
        let fin = resource("/api/v1/namespaces/x/finalize");
        assert_eq!(fin.subresource.as_deref(), Some("finalize"));
        let cms = resource("/api/v1/namespaces/default/configmaps");
        assert_eq!(
            (cms.namespace.as_deref(), cms.resource.as_str(), cms.name),
            (Some("default"), "configmaps", None)
        );
        let status = resource("/apis/example.com/v1/namespaces/ns/widgets/w1/status");
        assert_eq!(status.group, "example.com");
        assert_eq!(status.subresource.as_deref(), Some("status"));
        let cluster = resource(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/w.example.com/status",
        );
        assert_eq!(cluster.namespace, None);
        assert_eq!(cluster.subresource.as_deref(), Some("status"));
        assert_eq!(parse("/api/v1/namespaces//configmaps"), None);
    }
}
