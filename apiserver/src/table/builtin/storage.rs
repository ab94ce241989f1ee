//! Printers of `storage.k8s.io`: storage and volume attributes classes, CSI drivers, nodes and
//! capacities, and volume attachments.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::quantity::quantity;
use super::{age_cell, age_col, bool_or, col, items, len, name, name_cell, str_at};
use crate::table::Column;

pub(super) fn csi_driver_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "AttachRequired",
            "boolean",
            "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable.",
        ),
        col(
            "PodInfoOnMount",
            "boolean",
            "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline volume\n                                defined by a CSIVolumeSource, otherwise \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes < 1.29 and now is mutable.",
        ),
        col(
            "StorageCapacity",
            "boolean",
            "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is mutable.",
        ),
        col(
            "TokenRequests",
            "string",
            "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {\n  \"<audience>\": {\n    \"token\": <token>,\n    \"expirationTimestamp\": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically.",
        ),
        col(
            "RequiresRepublish",
            "boolean",
            "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container.",
        ),
        col(
            "Modes",
            "string",
            "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable.",
        ),
        age_col(),
    ]
}

/// A CSI driver, with kube-apiserver's defaults: attach required, no pod info, no capacity
/// tracking, no republishing, `Persistent` volumes only.
pub(super) fn csi_driver(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let token_requests = match &spec["tokenRequests"] {
        Value::Null => "<unset>".to_owned(),
        requests => items(requests)
            .iter()
            .map(|r| str_at(&r["audience"]))
            .collect::<Vec<_>>()
            .join(","),
    };
    let modes: Vec<&str> = items(&spec["volumeLifecycleModes"])
        .iter()
        .map(str_at)
        .collect();
    let modes = if modes.is_empty() {
        "Persistent".to_owned()
    } else {
        modes.join(",")
    };
    vec![
        name_cell(o),
        json!(bool_or(&spec["attachRequired"], true)),
        json!(bool_or(&spec["podInfoOnMount"], false)),
        json!(bool_or(&spec["storageCapacity"], false)),
        json!(token_requests),
        json!(bool_or(&spec["requiresRepublish"], false)),
        json!(modes),
        age_cell(o, now),
    ]
}

pub(super) fn csi_node_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Drivers",
            "integer",
            "Drivers indicates the number of CSI drivers registered on the node",
        ),
        age_col(),
    ]
}

pub(super) fn csi_node(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name_cell(o),
        json!(len(&o["spec"]["drivers"])),
        age_cell(o, now),
    ]
}

pub(super) fn csi_storage_capacity_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "StorageClassName",
            "string",
            "storageClassName represents the name of the StorageClass that the reported capacity applies to. It must meet the same requirements as the name of a StorageClass object (non-empty, DNS subdomain). If that object no longer exists, the CSIStorageCapacity object is obsolete and should be removed by its creator. This field is immutable.",
        ),
        col(
            "Capacity",
            "string",
            "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with topology and parameters that match the previous fields.\n\nThe semantic is currently (CSI spec 1.2) defined as: The available capacity, in bytes, of the storage that can be used to provision volumes. If not set, that information is currently unavailable.",
        ),
    ]
}

/// A capacity report; upstream prints no age for it.
pub(super) fn csi_storage_capacity(o: &Value) -> Vec<Value> {
    let capacity = match &o["capacity"] {
        Value::Null => "<unset>".to_owned(),
        capacity => quantity(capacity),
    };
    vec![
        name_cell(o),
        json!(str_at(&o["storageClassName"])),
        json!(capacity),
    ]
}

pub(super) fn storage_class_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Provisioner",
            "string",
            "provisioner indicates the type of the provisioner.",
        ),
        col(
            "ReclaimPolicy",
            "string",
            "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
        ),
        col(
            "VolumeBindingMode",
            "string",
            "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
        ),
        col(
            "AllowVolumeExpansion",
            "string",
            "allowVolumeExpansion shows whether the storage class allow volume expand.",
        ),
        age_col(),
    ]
}

/// A storage class, its name marked ` (default)` when annotated as the default one.
/// AllowVolumeExpansion is a boolean cell in a string column, as upstream's is.
pub(super) fn storage_class(o: &Value, now: Timestamp) -> Vec<Value> {
    let annotations = &o["metadata"]["annotations"];
    let default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|key| annotations[*key] == "true");
    vec![
        json!(marked_default(o, default)),
        json!(str_at(&o["provisioner"])),
        json!(o["reclaimPolicy"].as_str().unwrap_or("Delete")),
        json!(o["volumeBindingMode"].as_str().unwrap_or("Immediate")),
        json!(bool_or(&o["allowVolumeExpansion"], false)),
        age_cell(o, now),
    ]
}

/// The object's name, with ` (default)` after it for the default class.
fn marked_default(o: &Value, default: bool) -> String {
    let name = str_at(&o["metadata"]["name"]);
    if default {
        format!("{name} (default)")
    } else {
        name.to_owned()
    }
}

pub(super) fn volume_attachment_columns() -> Vec<Column> {
    vec![
        name(),
        // Upstream marks this column as holding names too.
        Column::new(
            "Attacher",
            "string",
            "name",
            "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().",
            0,
        ),
        col(
            "PV",
            "string",
            "persistentVolumeName represents the name of the persistent volume to attach.",
        ),
        col(
            "Node",
            "string",
            "nodeName represents the node that the volume should be attached to.",
        ),
        col(
            "Attached",
            "boolean",
            "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.",
        ),
        age_col(),
    ]
}

pub(super) fn volume_attachment(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    vec![
        name_cell(o),
        json!(str_at(&spec["attacher"])),
        json!(str_at(&spec["source"]["persistentVolumeName"])),
        json!(str_at(&spec["nodeName"])),
        json!(bool_or(&o["status"]["attached"], false)),
        age_cell(o, now),
    ]
}

pub(super) fn volume_attributes_class_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "DriverName",
            "string",
            "Name of the CSI driver This field is immutable.",
        ),
        age_col(),
    ]
}

pub(super) fn volume_attributes_class(o: &Value, now: Timestamp) -> Vec<Value> {
    let default = o["metadata"]["annotations"]["volumeattributesclass.alpha.kubernetes.io/is-default-class"]
        == "true";
    vec![
        json!(marked_default(o, default)),
        json!(str_at(&o["driverName"])),
        age_cell(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::json;

    #[test]
    fn storage_classes() {
        let mut standard = json!({"metadata": meta("standard"),
            "provisioner": "rancher.io/local-path", "reclaimPolicy": "Retain",
            "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true});
        standard["metadata"]["annotations"] =
            json!({"storageclass.kubernetes.io/is-default-class": "true"});
        assert_eq!(
            headers(Printer::StorageClass),
            [
                "NAME",
                "PROVISIONER",
                "RECLAIMPOLICY",
                "VOLUMEBINDINGMODE",
                "ALLOWVOLUMEEXPANSION",
                "AGE"
            ]
        );
        assert_eq!(
            cells(Printer::StorageClass, standard),
            [
                json!("standard (default)"),
                json!("rancher.io/local-path"),
                json!("Retain"),
                json!("WaitForFirstConsumer"),
                json!(true),
                json!("5m")
            ]
        );
        let mut fast = json!({"metadata": meta("fast"), "provisioner": "ebs.csi.aws.com"});
        fast["metadata"]["annotations"] =
            json!({"storageclass.beta.kubernetes.io/is-default-class": "false"});
        assert_eq!(
            cells(Printer::StorageClass, fast),
            [
                json!("fast"),
                json!("ebs.csi.aws.com"),
                json!("Delete"),
                json!("Immediate"),
                json!(false),
                json!("5m")
            ]
        );
    }

    #[test]
    fn volume_attributes_classes() {
        let mut gold = json!({"metadata": meta("gold"), "driverName": "pd.csi.storage.gke.io",
            "parameters": {"iops": "5000"}});
        assert_eq!(
            headers(Printer::VolumeAttributesClass),
            ["NAME", "DRIVERNAME", "AGE"]
        );
        assert_eq!(
            cells(Printer::VolumeAttributesClass, gold.clone()),
            [json!("gold"), json!("pd.csi.storage.gke.io"), json!("5m")]
        );
        gold["metadata"]["annotations"] =
            json!({"volumeattributesclass.alpha.kubernetes.io/is-default-class": "true"});
        assert_eq!(
            cells(Printer::VolumeAttributesClass, gold)[0],
            json!("gold (default)")
        );
    }

    #[test]
    fn csi_drivers_nodes_and_capacities() {
        let driver = json!({"metadata": meta("ebs.csi.aws.com"), "spec": {
            "attachRequired": false, "podInfoOnMount": true, "storageCapacity": true,
            "tokenRequests": [{"audience": "sts.amazonaws.com"}, {"audience": ""}],
            "volumeLifecycleModes": ["Persistent", "Ephemeral"]}});
        assert_eq!(
            headers(Printer::CsiDriver),
            [
                "NAME",
                "ATTACHREQUIRED",
                "PODINFOONMOUNT",
                "STORAGECAPACITY",
                "TOKENREQUESTS",
                "REQUIRESREPUBLISH",
                "MODES",
                "AGE"
            ]
        );
        assert_eq!(
            cells(Printer::CsiDriver, driver),
            [
                json!("ebs.csi.aws.com"),
                json!(false),
                json!(true),
                json!(true),
                json!("sts.amazonaws.com,"),
                json!(false),
                json!("Persistent,Ephemeral"),
                json!("5m")
            ]
        );
        let bare = json!({"metadata": meta("hostpath.csi.k8s.io"), "spec": {}});
        assert_eq!(
            cells(Printer::CsiDriver, bare)[1..7],
            [
                json!(true),
                json!(false),
                json!(false),
                json!("<unset>"),
                json!(false),
                json!("Persistent")
            ]
        );

        let node = json!({"metadata": meta("node-1"), "spec": {"drivers": [
            {"name": "ebs.csi.aws.com", "nodeID": "i-1"}, {"name": "efs.csi.aws.com", "nodeID": "i-1"}]}});
        assert_eq!(headers(Printer::CsiNode), ["NAME", "DRIVERS", "AGE"]);
        assert_eq!(
            cells(Printer::CsiNode, node),
            [json!("node-1"), json!(2), json!("5m")]
        );

        let capacity = json!({"metadata": meta("csisc-abcde"), "storageClassName": "fast",
            "capacity": "102400Mi", "nodeTopology": {}});
        assert_eq!(
            headers(Printer::CsiStorageCapacity),
            ["NAME", "STORAGECLASSNAME", "CAPACITY"]
        );
        assert_eq!(
            cells(Printer::CsiStorageCapacity, capacity),
            [json!("csisc-abcde"), json!("fast"), json!("100Gi")]
        );
        let unknown = json!({"metadata": meta("csisc-x"), "storageClassName": "slow"});
        assert_eq!(
            cells(Printer::CsiStorageCapacity, unknown)[2],
            json!("<unset>")
        );
    }

    #[test]
    fn volume_attachments() {
        let attachment = json!({"metadata": meta("csi-0123abcd"), "spec": {
                "attacher": "ebs.csi.aws.com", "nodeName": "node-1",
                "source": {"persistentVolumeName": "pv-data"}},
            "status": {"attached": true}});
        assert_eq!(
            headers(Printer::VolumeAttachment),
            ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]
        );
        assert_eq!(Printer::VolumeAttachment.columns()[1].format, "name");
        assert_eq!(
            cells(Printer::VolumeAttachment, attachment),
            [
                json!("csi-0123abcd"),
                json!("ebs.csi.aws.com"),
                json!("pv-data"),
                json!("node-1"),
                json!(true),
                json!("5m")
            ]
        );
        let inline = json!({"metadata": meta("csi-inline"), "spec": {"attacher": "a",
            "nodeName": "n", "source": {"inlineVolumeSpec": {}}}});
        assert_eq!(
            cells(Printer::VolumeAttachment, inline)[2..5],
            [json!(""), json!("n"), json!(false)]
        );
    }
}
