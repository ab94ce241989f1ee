//! Descriptors of the messages that clients send as protobuf, and of everything they embed.
//!
//! Derived mechanically from the `json` and `protobuf` struct tags of the Go types in
//! k8s.io/api and k8s.io/apimachinery (a snapshot newer than v1.35; field numbers never change
//! between releases, so older clients decode the same): a pointer field is [`Optional`] or
//! [`Nullable`], a field without `omitempty` is [`Always`], an embedded struct is [`Inline`]
//! (see [`Presence`](super::message::Presence)). Every message reachable from a top-level kind
//! is described in full, so nothing a client sends is dropped. Statics follow the order in
//! which the kinds reach them.

use super::message::Kind::{
    Bool, Bytes, Int, IntOrString, Object, Quantity, RawJson, String, StringList, Time,
};
use super::message::Presence::{Always, Inline, Nullable, Omit, OmitZero, Optional};
use super::message::Shape::{List, Map, Single};
use super::message::{Message, f};

/// `core/v1 Secret`.
pub(super) static SECRET: Message = Message::new(
    "Secret",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(5, "immutable", Bool, Single, Optional),
        f(2, "data", Bytes, Map, Omit),
        f(4, "stringData", String, Map, Omit),
        f(3, "type", String, Single, Omit),
    ],
);

/// `core/v1 ConfigMap`.
pub(super) static CONFIG_MAP: Message = Message::new(
    "ConfigMap",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(4, "immutable", Bool, Single, Optional),
        f(2, "data", String, Map, Omit),
        f(3, "binaryData", Bytes, Map, Omit),
    ],
);

/// `core/v1 Namespace`.
pub(super) static NAMESPACE: Message = Message::new(
    "Namespace",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "spec", Object(&NAMESPACE_SPEC), Single, Omit),
        f(3, "status", Object(&NAMESPACE_STATUS), Single, Omit),
    ],
);

/// `core/v1 ServiceAccount`.
pub(super) static SERVICE_ACCOUNT: Message = Message::new(
    "ServiceAccount",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "secrets", Object(&OBJECT_REFERENCE), List, Omit),
        f(
            3,
            "imagePullSecrets",
            Object(&LOCAL_OBJECT_REFERENCE),
            List,
            Omit,
        ),
        f(4, "automountServiceAccountToken", Bool, Single, Optional),
    ],
);

/// `meta/v1 DeleteOptions`.
pub(super) static DELETE_OPTIONS: Message = Message::new(
    "DeleteOptions",
    &[
        f(1, "gracePeriodSeconds", Int, Single, Optional),
        f(2, "preconditions", Object(&PRECONDITIONS), Single, Optional),
        f(3, "orphanDependents", Bool, Single, Optional),
        f(4, "propagationPolicy", String, Single, Optional),
        f(5, "dryRun", String, List, Omit),
        f(
            6,
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            Bool,
            Single,
            Optional,
        ),
    ],
);

/// `apps/v1 Deployment`.
pub(super) static DEPLOYMENT: Message = Message::new(
    "Deployment",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "spec", Object(&DEPLOYMENT_SPEC), Single, Omit),
        f(3, "status", Object(&DEPLOYMENT_STATUS), Single, Omit),
    ],
);

/// `authorization/v1 SelfSubjectAccessReview`.
pub(super) static SELF_SUBJECT_ACCESS_REVIEW: Message = Message::new(
    "SelfSubjectAccessReview",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(
            2,
            "spec",
            Object(&SELF_SUBJECT_ACCESS_REVIEW_SPEC),
            Single,
            Always,
        ),
        f(
            3,
            "status",
            Object(&SUBJECT_ACCESS_REVIEW_STATUS),
            Single,
            Omit,
        ),
    ],
);

/// `authentication/v1 TokenRequest`.
pub(super) static TOKEN_REQUEST: Message = Message::new(
    "TokenRequest",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "spec", Object(&TOKEN_REQUEST_SPEC), Single, Always),
        f(3, "status", Object(&TOKEN_REQUEST_STATUS), Single, Omit),
    ],
);

/// `authorization/v1 SelfSubjectRulesReview` (`kubectl auth can-i --list`): the request carries
/// the namespace; the status is the server's answer.
pub(super) static SELF_SUBJECT_RULES_REVIEW: Message = Message::new(
    "SelfSubjectRulesReview",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(
            2,
            "spec",
            Object(&SELF_SUBJECT_RULES_REVIEW_SPEC),
            Single,
            Always,
        ),
    ],
);

/// `authorization/v1 SelfSubjectRulesReviewSpec`.
pub(super) static SELF_SUBJECT_RULES_REVIEW_SPEC: Message = Message::new(
    "SelfSubjectRulesReviewSpec",
    &[f(1, "namespace", String, Single, Omit)],
);

/// `authentication/v1 SelfSubjectReview` (`kubectl auth whoami`): the request carries only
/// metadata; the status is the server's answer.
pub(super) static SELF_SUBJECT_REVIEW: Message = Message::new(
    "SelfSubjectReview",
    &[f(1, "metadata", Object(&OBJECT_META), Single, Omit)],
);

/// `batch/v1 Job`.
pub(super) static JOB: Message = Message::new(
    "Job",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "spec", Object(&JOB_SPEC), Single, Omit),
        f(3, "status", Object(&JOB_STATUS), Single, Omit),
    ],
);

/// `batch/v1 CronJob`.
pub(super) static CRON_JOB: Message = Message::new(
    "CronJob",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "spec", Object(&CRON_JOB_SPEC), Single, Omit),
        f(3, "status", Object(&CRON_JOB_STATUS), Single, Omit),
    ],
);

/// `core/v1 Service`.
pub(super) static SERVICE: Message = Message::new(
    "Service",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "spec", Object(&SERVICE_SPEC), Single, Omit),
        f(3, "status", Object(&SERVICE_STATUS), Single, Omit),
    ],
);

/// `core/v1 ResourceQuota`.
pub(super) static RESOURCE_QUOTA: Message = Message::new(
    "ResourceQuota",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "spec", Object(&RESOURCE_QUOTA_SPEC), Single, Omit),
        f(3, "status", Object(&RESOURCE_QUOTA_STATUS), Single, Omit),
    ],
);

/// `rbac/v1 Role`.
pub(super) static ROLE: Message = Message::new(
    "Role",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "rules", Object(&POLICY_RULE), List, Always),
    ],
);

/// `rbac/v1 RoleBinding`.
pub(super) static ROLE_BINDING: Message = Message::new(
    "RoleBinding",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "subjects", Object(&SUBJECT), List, Omit),
        f(3, "roleRef", Object(&ROLE_REF), Single, Always),
    ],
);

/// `rbac/v1 ClusterRole`.
pub(super) static CLUSTER_ROLE: Message = Message::new(
    "ClusterRole",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "rules", Object(&POLICY_RULE), List, Always),
        f(
            3,
            "aggregationRule",
            Object(&AGGREGATION_RULE),
            Single,
            Optional,
        ),
    ],
);

/// `rbac/v1 ClusterRoleBinding`.
pub(super) static CLUSTER_ROLE_BINDING: Message = Message::new(
    "ClusterRoleBinding",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "subjects", Object(&SUBJECT), List, Omit),
        f(3, "roleRef", Object(&ROLE_REF), Single, Always),
    ],
);

/// `networking/v1 Ingress`.
pub(super) static INGRESS: Message = Message::new(
    "Ingress",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "spec", Object(&INGRESS_SPEC), Single, Omit),
        f(3, "status", Object(&INGRESS_STATUS), Single, Omit),
    ],
);

/// `policy/v1 PodDisruptionBudget`.
pub(super) static POD_DISRUPTION_BUDGET: Message = Message::new(
    "PodDisruptionBudget",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "spec", Object(&POD_DISRUPTION_BUDGET_SPEC), Single, Omit),
        f(
            3,
            "status",
            Object(&POD_DISRUPTION_BUDGET_STATUS),
            Single,
            Omit,
        ),
    ],
);

/// `scheduling/v1 PriorityClass`.
pub(super) static PRIORITY_CLASS: Message = Message::new(
    "PriorityClass",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "value", Int, Single, Always),
        f(3, "globalDefault", Bool, Single, Omit),
        f(4, "description", String, Single, Omit),
        f(5, "preemptionPolicy", String, Single, Optional),
    ],
);

/// `meta/v1 ObjectMeta`.
pub(super) static OBJECT_META: Message = Message::new(
    "ObjectMeta",
    &[
        f(1, "name", String, Single, Omit),
        f(2, "generateName", String, Single, Omit),
        f(3, "namespace", String, Single, Omit),
        f(4, "selfLink", String, Single, Omit),
        f(5, "uid", String, Single, Omit),
        f(6, "resourceVersion", String, Single, Omit),
        f(7, "generation", Int, Single, Omit),
        f(8, "creationTimestamp", Time, Single, OmitZero),
        f(9, "deletionTimestamp", Time, Single, Optional),
        f(10, "deletionGracePeriodSeconds", Int, Single, Optional),
        f(11, "labels", String, Map, Omit),
        f(12, "annotations", String, Map, Omit),
        f(13, "ownerReferences", Object(&OWNER_REFERENCE), List, Omit),
        f(14, "finalizers", String, List, Omit),
        f(
            17,
            "managedFields",
            Object(&MANAGED_FIELDS_ENTRY),
            List,
            Omit,
        ),
    ],
);

/// `core/v1 NamespaceSpec`.
pub(super) static NAMESPACE_SPEC: Message =
    Message::new("NamespaceSpec", &[f(1, "finalizers", String, List, Omit)]);

/// `core/v1 NamespaceStatus`.
pub(super) static NAMESPACE_STATUS: Message = Message::new(
    "NamespaceStatus",
    &[
        f(1, "phase", String, Single, Omit),
        f(2, "conditions", Object(&NAMESPACE_CONDITION), List, Omit),
    ],
);

/// `core/v1 ObjectReference`.
pub(super) static OBJECT_REFERENCE: Message = Message::new(
    "ObjectReference",
    &[
        f(1, "kind", String, Single, Omit),
        f(2, "namespace", String, Single, Omit),
        f(3, "name", String, Single, Omit),
        f(4, "uid", String, Single, Omit),
        f(5, "apiVersion", String, Single, Omit),
        f(6, "resourceVersion", String, Single, Omit),
        f(7, "fieldPath", String, Single, Omit),
    ],
);

/// `core/v1 LocalObjectReference`.
pub(super) static LOCAL_OBJECT_REFERENCE: Message = Message::new(
    "LocalObjectReference",
    &[f(1, "name", String, Single, Omit)],
);

/// `meta/v1 Preconditions`.
pub(super) static PRECONDITIONS: Message = Message::new(
    "Preconditions",
    &[
        f(1, "uid", String, Single, Optional),
        f(2, "resourceVersion", String, Single, Optional),
    ],
);

/// `apps/v1 DeploymentSpec`.
pub(super) static DEPLOYMENT_SPEC: Message = Message::new(
    "DeploymentSpec",
    &[
        f(1, "replicas", Int, Single, Optional),
        f(2, "selector", Object(&LABEL_SELECTOR), Single, Nullable),
        f(3, "template", Object(&POD_TEMPLATE_SPEC), Single, Always),
        f(4, "strategy", Object(&DEPLOYMENT_STRATEGY), Single, Omit),
        f(5, "minReadySeconds", Int, Single, Omit),
        f(6, "revisionHistoryLimit", Int, Single, Optional),
        f(7, "paused", Bool, Single, Omit),
        f(9, "progressDeadlineSeconds", Int, Single, Optional),
    ],
);

/// `apps/v1 DeploymentStatus`.
pub(super) static DEPLOYMENT_STATUS: Message = Message::new(
    "DeploymentStatus",
    &[
        f(1, "observedGeneration", Int, Single, Omit),
        f(2, "replicas", Int, Single, Omit),
        f(3, "updatedReplicas", Int, Single, Omit),
        f(7, "readyReplicas", Int, Single, Omit),
        f(4, "availableReplicas", Int, Single, Omit),
        f(5, "unavailableReplicas", Int, Single, Omit),
        f(9, "terminatingReplicas", Int, Single, Optional),
        f(6, "conditions", Object(&DEPLOYMENT_CONDITION), List, Omit),
        f(8, "collisionCount", Int, Single, Optional),
    ],
);

/// `authorization/v1 SelfSubjectAccessReviewSpec`.
pub(super) static SELF_SUBJECT_ACCESS_REVIEW_SPEC: Message = Message::new(
    "SelfSubjectAccessReviewSpec",
    &[
        f(
            1,
            "resourceAttributes",
            Object(&RESOURCE_ATTRIBUTES),
            Single,
            Optional,
        ),
        f(
            2,
            "nonResourceAttributes",
            Object(&NON_RESOURCE_ATTRIBUTES),
            Single,
            Optional,
        ),
    ],
);

/// `authorization/v1 SubjectAccessReviewStatus`.
pub(super) static SUBJECT_ACCESS_REVIEW_STATUS: Message = Message::new(
    "SubjectAccessReviewStatus",
    &[
        f(1, "allowed", Bool, Single, Always),
        f(4, "denied", Bool, Single, Omit),
        f(2, "reason", String, Single, Omit),
        f(3, "evaluationError", String, Single, Omit),
    ],
);

/// `authentication/v1 TokenRequestSpec`.
pub(super) static TOKEN_REQUEST_SPEC: Message = Message::new(
    "TokenRequestSpec",
    &[
        f(1, "audiences", String, List, Always),
        f(4, "expirationSeconds", Int, Single, Nullable),
        f(
            3,
            "boundObjectRef",
            Object(&BOUND_OBJECT_REFERENCE),
            Single,
            Nullable,
        ),
        f(5, "attestations", StringList, Map, Omit),
    ],
);

/// `authentication/v1 TokenRequestStatus`.
pub(super) static TOKEN_REQUEST_STATUS: Message = Message::new(
    "TokenRequestStatus",
    &[
        f(1, "token", String, Single, Always),
        f(2, "expirationTimestamp", Time, Single, Always),
    ],
);

/// `batch/v1 JobSpec`.
pub(super) static JOB_SPEC: Message = Message::new(
    "JobSpec",
    &[
        f(1, "parallelism", Int, Single, Optional),
        f(2, "completions", Int, Single, Optional),
        f(3, "activeDeadlineSeconds", Int, Single, Optional),
        f(
            11,
            "podFailurePolicy",
            Object(&POD_FAILURE_POLICY),
            Single,
            Optional,
        ),
        f(
            16,
            "successPolicy",
            Object(&SUCCESS_POLICY),
            Single,
            Optional,
        ),
        f(7, "backoffLimit", Int, Single, Optional),
        f(12, "backoffLimitPerIndex", Int, Single, Optional),
        f(13, "maxFailedIndexes", Int, Single, Optional),
        f(4, "selector", Object(&LABEL_SELECTOR), Single, Optional),
        f(5, "manualSelector", Bool, Single, Optional),
        f(6, "template", Object(&POD_TEMPLATE_SPEC), Single, Always),
        f(8, "ttlSecondsAfterFinished", Int, Single, Optional),
        f(9, "completionMode", String, Single, Optional),
        f(10, "suspend", Bool, Single, Optional),
        f(14, "podReplacementPolicy", String, Single, Optional),
        f(15, "managedBy", String, Single, Optional),
        f(
            17,
            "scheduling",
            Object(&JOB_SCHEDULING_CONFIGURATION),
            Single,
            Optional,
        ),
    ],
);

/// `batch/v1 JobStatus`.
pub(super) static JOB_STATUS: Message = Message::new(
    "JobStatus",
    &[
        f(1, "conditions", Object(&JOB_CONDITION), List, Omit),
        f(2, "startTime", Time, Single, Optional),
        f(3, "completionTime", Time, Single, Optional),
        f(4, "active", Int, Single, Omit),
        f(5, "succeeded", Int, Single, Omit),
        f(6, "failed", Int, Single, Omit),
        f(11, "terminating", Int, Single, Optional),
        f(7, "completedIndexes", String, Single, Omit),
        f(10, "failedIndexes", String, Single, Optional),
        f(
            8,
            "uncountedTerminatedPods",
            Object(&UNCOUNTED_TERMINATED_PODS),
            Single,
            Optional,
        ),
        f(9, "ready", Int, Single, Optional),
    ],
);

/// `batch/v1 CronJobSpec`.
pub(super) static CRON_JOB_SPEC: Message = Message::new(
    "CronJobSpec",
    &[
        f(1, "schedule", String, Single, Always),
        f(8, "timeZone", String, Single, Optional),
        f(2, "startingDeadlineSeconds", Int, Single, Optional),
        f(3, "concurrencyPolicy", String, Single, Omit),
        f(4, "suspend", Bool, Single, Optional),
        f(5, "jobTemplate", Object(&JOB_TEMPLATE_SPEC), Single, Always),
        f(6, "successfulJobsHistoryLimit", Int, Single, Optional),
        f(7, "failedJobsHistoryLimit", Int, Single, Optional),
    ],
);

/// `batch/v1 CronJobStatus`.
pub(super) static CRON_JOB_STATUS: Message = Message::new(
    "CronJobStatus",
    &[
        f(1, "active", Object(&OBJECT_REFERENCE), List, Omit),
        f(4, "lastScheduleTime", Time, Single, Optional),
        f(5, "lastSuccessfulTime", Time, Single, Optional),
    ],
);

/// `core/v1 ServiceSpec`.
pub(super) static SERVICE_SPEC: Message = Message::new(
    "ServiceSpec",
    &[
        f(1, "ports", Object(&SERVICE_PORT), List, Omit),
        f(2, "selector", String, Map, Omit),
        f(3, "clusterIP", String, Single, Omit),
        f(18, "clusterIPs", String, List, Omit),
        f(4, "type", String, Single, Omit),
        f(5, "externalIPs", String, List, Omit),
        f(7, "sessionAffinity", String, Single, Omit),
        f(8, "loadBalancerIP", String, Single, Omit),
        f(9, "loadBalancerSourceRanges", String, List, Omit),
        f(10, "externalName", String, Single, Omit),
        f(11, "externalTrafficPolicy", String, Single, Omit),
        f(12, "healthCheckNodePort", Int, Single, Omit),
        f(13, "publishNotReadyAddresses", Bool, Single, Omit),
        f(
            14,
            "sessionAffinityConfig",
            Object(&SESSION_AFFINITY_CONFIG),
            Single,
            Optional,
        ),
        f(19, "ipFamilies", String, List, Omit),
        f(17, "ipFamilyPolicy", String, Single, Optional),
        f(20, "allocateLoadBalancerNodePorts", Bool, Single, Optional),
        f(21, "loadBalancerClass", String, Single, Optional),
        f(22, "internalTrafficPolicy", String, Single, Optional),
        f(23, "trafficDistribution", String, Single, Optional),
    ],
);

/// `core/v1 ServiceStatus`.
pub(super) static SERVICE_STATUS: Message = Message::new(
    "ServiceStatus",
    &[
        f(
            1,
            "loadBalancer",
            Object(&LOAD_BALANCER_STATUS),
            Single,
            Omit,
        ),
        f(2, "conditions", Object(&CONDITION), List, Omit),
    ],
);

/// `core/v1 ResourceQuotaSpec`.
pub(super) static RESOURCE_QUOTA_SPEC: Message = Message::new(
    "ResourceQuotaSpec",
    &[
        f(1, "hard", Quantity, Map, Omit),
        f(2, "scopes", String, List, Omit),
        f(
            3,
            "scopeSelector",
            Object(&SCOPE_SELECTOR),
            Single,
            Optional,
        ),
    ],
);

/// `core/v1 ResourceQuotaStatus`.
pub(super) static RESOURCE_QUOTA_STATUS: Message = Message::new(
    "ResourceQuotaStatus",
    &[
        f(1, "hard", Quantity, Map, Omit),
        f(2, "used", Quantity, Map, Omit),
    ],
);

/// `rbac/v1 PolicyRule`.
pub(super) static POLICY_RULE: Message = Message::new(
    "PolicyRule",
    &[
        f(1, "verbs", String, List, Always),
        f(2, "apiGroups", String, List, Omit),
        f(3, "resources", String, List, Omit),
        f(4, "resourceNames", String, List, Omit),
        f(5, "nonResourceURLs", String, List, Omit),
    ],
);

/// `rbac/v1 Subject`.
pub(super) static SUBJECT: Message = Message::new(
    "Subject",
    &[
        f(1, "kind", String, Single, Always),
        f(2, "apiGroup", String, Single, Omit),
        f(3, "name", String, Single, Always),
        f(4, "namespace", String, Single, Omit),
    ],
);

/// `rbac/v1 RoleRef`.
pub(super) static ROLE_REF: Message = Message::new(
    "RoleRef",
    &[
        f(1, "apiGroup", String, Single, Always),
        f(2, "kind", String, Single, Always),
        f(3, "name", String, Single, Always),
    ],
);

/// `rbac/v1 AggregationRule`.
pub(super) static AGGREGATION_RULE: Message = Message::new(
    "AggregationRule",
    &[f(
        1,
        "clusterRoleSelectors",
        Object(&LABEL_SELECTOR),
        List,
        Omit,
    )],
);

/// `networking/v1 IngressSpec`.
pub(super) static INGRESS_SPEC: Message = Message::new(
    "IngressSpec",
    &[
        f(4, "ingressClassName", String, Single, Optional),
        f(
            1,
            "defaultBackend",
            Object(&INGRESS_BACKEND),
            Single,
            Optional,
        ),
        f(2, "tls", Object(&INGRESS_TLS), List, Omit),
        f(3, "rules", Object(&INGRESS_RULE), List, Omit),
    ],
);

/// `networking/v1 IngressStatus`.
pub(super) static INGRESS_STATUS: Message = Message::new(
    "IngressStatus",
    &[f(
        1,
        "loadBalancer",
        Object(&INGRESS_LOAD_BALANCER_STATUS),
        Single,
        Omit,
    )],
);

/// `policy/v1 PodDisruptionBudgetSpec`.
pub(super) static POD_DISRUPTION_BUDGET_SPEC: Message = Message::new(
    "PodDisruptionBudgetSpec",
    &[
        f(1, "minAvailable", IntOrString, Single, Optional),
        f(2, "selector", Object(&LABEL_SELECTOR), Single, Optional),
        f(3, "maxUnavailable", IntOrString, Single, Optional),
        f(4, "unhealthyPodEvictionPolicy", String, Single, Optional),
    ],
);

/// `policy/v1 PodDisruptionBudgetStatus`.
pub(super) static POD_DISRUPTION_BUDGET_STATUS: Message = Message::new(
    "PodDisruptionBudgetStatus",
    &[
        f(1, "observedGeneration", Int, Single, Omit),
        f(2, "disruptedPods", Time, Map, Omit),
        f(3, "disruptionsAllowed", Int, Single, Always),
        f(4, "currentHealthy", Int, Single, Always),
        f(5, "desiredHealthy", Int, Single, Always),
        f(6, "expectedPods", Int, Single, Always),
        f(7, "conditions", Object(&CONDITION), List, Omit),
    ],
);

/// `meta/v1 OwnerReference`.
pub(super) static OWNER_REFERENCE: Message = Message::new(
    "OwnerReference",
    &[
        f(5, "apiVersion", String, Single, Always),
        f(1, "kind", String, Single, Always),
        f(3, "name", String, Single, Always),
        f(4, "uid", String, Single, Always),
        f(6, "controller", Bool, Single, Optional),
        f(7, "blockOwnerDeletion", Bool, Single, Optional),
    ],
);

/// `meta/v1 ManagedFieldsEntry`.
pub(super) static MANAGED_FIELDS_ENTRY: Message = Message::new(
    "ManagedFieldsEntry",
    &[
        f(1, "manager", String, Single, Omit),
        f(2, "operation", String, Single, Omit),
        f(3, "apiVersion", String, Single, Omit),
        f(4, "time", Time, Single, Optional),
        f(6, "fieldsType", String, Single, Omit),
        f(7, "fieldsV1", RawJson, Single, Optional),
        f(8, "subresource", String, Single, Omit),
    ],
);

/// `core/v1 NamespaceCondition`.
pub(super) static NAMESPACE_CONDITION: Message = Message::new(
    "NamespaceCondition",
    &[
        f(1, "type", String, Single, Always),
        f(2, "status", String, Single, Always),
        f(4, "lastTransitionTime", Time, Single, Omit),
        f(5, "reason", String, Single, Omit),
        f(6, "message", String, Single, Omit),
    ],
);

/// `meta/v1 LabelSelector`.
pub(super) static LABEL_SELECTOR: Message = Message::new(
    "LabelSelector",
    &[
        f(1, "matchLabels", String, Map, Omit),
        f(
            2,
            "matchExpressions",
            Object(&LABEL_SELECTOR_REQUIREMENT),
            List,
            Omit,
        ),
    ],
);

/// `core/v1 PodTemplateSpec`.
pub(super) static POD_TEMPLATE_SPEC: Message = Message::new(
    "PodTemplateSpec",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "spec", Object(&POD_SPEC), Single, Omit),
    ],
);

/// `apps/v1 DeploymentStrategy`.
pub(super) static DEPLOYMENT_STRATEGY: Message = Message::new(
    "DeploymentStrategy",
    &[
        f(1, "type", String, Single, Omit),
        f(
            2,
            "rollingUpdate",
            Object(&ROLLING_UPDATE_DEPLOYMENT),
            Single,
            Optional,
        ),
    ],
);

/// `apps/v1 DeploymentCondition`.
pub(super) static DEPLOYMENT_CONDITION: Message = Message::new(
    "DeploymentCondition",
    &[
        f(1, "type", String, Single, Always),
        f(2, "status", String, Single, Always),
        f(6, "lastUpdateTime", Time, Single, Omit),
        f(7, "lastTransitionTime", Time, Single, Omit),
        f(4, "reason", String, Single, Omit),
        f(5, "message", String, Single, Omit),
    ],
);

/// `authorization/v1 ResourceAttributes`.
pub(super) static RESOURCE_ATTRIBUTES: Message = Message::new(
    "ResourceAttributes",
    &[
        f(1, "namespace", String, Single, Omit),
        f(2, "verb", String, Single, Omit),
        f(3, "group", String, Single, Omit),
        f(4, "version", String, Single, Omit),
        f(5, "resource", String, Single, Omit),
        f(6, "subresource", String, Single, Omit),
        f(7, "name", String, Single, Omit),
        f(
            8,
            "fieldSelector",
            Object(&FIELD_SELECTOR_ATTRIBUTES),
            Single,
            Optional,
        ),
        f(
            9,
            "labelSelector",
            Object(&LABEL_SELECTOR_ATTRIBUTES),
            Single,
            Optional,
        ),
    ],
);

/// `authorization/v1 NonResourceAttributes`.
pub(super) static NON_RESOURCE_ATTRIBUTES: Message = Message::new(
    "NonResourceAttributes",
    &[
        f(1, "path", String, Single, Omit),
        f(2, "verb", String, Single, Omit),
    ],
);

/// `authentication/v1 BoundObjectReference`.
pub(super) static BOUND_OBJECT_REFERENCE: Message = Message::new(
    "BoundObjectReference",
    &[
        f(1, "kind", String, Single, Omit),
        f(2, "apiVersion", String, Single, Omit),
        f(3, "name", String, Single, Omit),
        f(4, "uid", String, Single, Omit),
    ],
);

/// `batch/v1 PodFailurePolicy`.
pub(super) static POD_FAILURE_POLICY: Message = Message::new(
    "PodFailurePolicy",
    &[f(
        1,
        "rules",
        Object(&POD_FAILURE_POLICY_RULE),
        List,
        Always,
    )],
);

/// `batch/v1 SuccessPolicy`.
pub(super) static SUCCESS_POLICY: Message = Message::new(
    "SuccessPolicy",
    &[f(1, "rules", Object(&SUCCESS_POLICY_RULE), List, Always)],
);

/// `batch/v1 JobSchedulingConfiguration`.
pub(super) static JOB_SCHEDULING_CONFIGURATION: Message = Message::new(
    "JobSchedulingConfiguration",
    &[
        f(
            1,
            "schedulingPolicy",
            Object(&WORKLOAD_POD_GROUP_SCHEDULING_POLICY),
            Single,
            Optional,
        ),
        f(
            2,
            "schedulingConstraints",
            Object(&WORKLOAD_POD_GROUP_SCHEDULING_CONSTRAINTS),
            Single,
            Optional,
        ),
        f(
            3,
            "disruptionMode",
            Object(&WORKLOAD_POD_GROUP_DISRUPTION_MODE),
            Single,
            Optional,
        ),
        f(
            4,
            "resourceClaims",
            Object(&WORKLOAD_POD_GROUP_RESOURCE_CLAIM),
            List,
            Omit,
        ),
    ],
);

/// `batch/v1 JobCondition`.
pub(super) static JOB_CONDITION: Message = Message::new(
    "JobCondition",
    &[
        f(1, "type", String, Single, Always),
        f(2, "status", String, Single, Always),
        f(3, "lastProbeTime", Time, Single, Omit),
        f(4, "lastTransitionTime", Time, Single, Omit),
        f(5, "reason", String, Single, Omit),
        f(6, "message", String, Single, Omit),
    ],
);

/// `batch/v1 UncountedTerminatedPods`.
pub(super) static UNCOUNTED_TERMINATED_PODS: Message = Message::new(
    "UncountedTerminatedPods",
    &[
        f(1, "succeeded", String, List, Omit),
        f(2, "failed", String, List, Omit),
    ],
);

/// `batch/v1 JobTemplateSpec`.
pub(super) static JOB_TEMPLATE_SPEC: Message = Message::new(
    "JobTemplateSpec",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(2, "spec", Object(&JOB_SPEC), Single, Omit),
    ],
);

/// `core/v1 ServicePort`.
pub(super) static SERVICE_PORT: Message = Message::new(
    "ServicePort",
    &[
        f(1, "name", String, Single, Omit),
        f(2, "protocol", String, Single, Omit),
        f(6, "appProtocol", String, Single, Optional),
        f(3, "port", Int, Single, Always),
        f(4, "targetPort", IntOrString, Single, Omit),
        f(5, "nodePort", Int, Single, Omit),
    ],
);

/// `core/v1 SessionAffinityConfig`.
pub(super) static SESSION_AFFINITY_CONFIG: Message = Message::new(
    "SessionAffinityConfig",
    &[f(
        1,
        "clientIP",
        Object(&CLIENT_IP_CONFIG),
        Single,
        Optional,
    )],
);

/// `core/v1 LoadBalancerStatus`.
pub(super) static LOAD_BALANCER_STATUS: Message = Message::new(
    "LoadBalancerStatus",
    &[f(1, "ingress", Object(&LOAD_BALANCER_INGRESS), List, Omit)],
);

/// `meta/v1 Condition`.
pub(super) static CONDITION: Message = Message::new(
    "Condition",
    &[
        f(1, "type", String, Single, Always),
        f(2, "status", String, Single, Always),
        f(3, "observedGeneration", Int, Single, Omit),
        f(4, "lastTransitionTime", Time, Single, Always),
        f(5, "reason", String, Single, Always),
        f(6, "message", String, Single, Always),
    ],
);

/// `core/v1 ScopeSelector`.
pub(super) static SCOPE_SELECTOR: Message = Message::new(
    "ScopeSelector",
    &[f(
        1,
        "matchExpressions",
        Object(&SCOPED_RESOURCE_SELECTOR_REQUIREMENT),
        List,
        Omit,
    )],
);

/// `networking/v1 IngressBackend`.
pub(super) static INGRESS_BACKEND: Message = Message::new(
    "IngressBackend",
    &[
        f(
            4,
            "service",
            Object(&INGRESS_SERVICE_BACKEND),
            Single,
            Optional,
        ),
        f(
            3,
            "resource",
            Object(&TYPED_LOCAL_OBJECT_REFERENCE),
            Single,
            Optional,
        ),
    ],
);

/// `networking/v1 IngressTLS`.
pub(super) static INGRESS_TLS: Message = Message::new(
    "IngressTLS",
    &[
        f(1, "hosts", String, List, Omit),
        f(2, "secretName", String, Single, Omit),
    ],
);

/// `networking/v1 IngressRule`.
pub(super) static INGRESS_RULE: Message = Message::new(
    "IngressRule",
    &[
        f(1, "host", String, Single, Omit),
        f(2, "", Object(&INGRESS_RULE_VALUE), Single, Inline),
    ],
);

/// `networking/v1 IngressLoadBalancerStatus`.
pub(super) static INGRESS_LOAD_BALANCER_STATUS: Message = Message::new(
    "IngressLoadBalancerStatus",
    &[f(
        1,
        "ingress",
        Object(&INGRESS_LOAD_BALANCER_INGRESS),
        List,
        Omit,
    )],
);

/// `meta/v1 LabelSelectorRequirement`.
pub(super) static LABEL_SELECTOR_REQUIREMENT: Message = Message::new(
    "LabelSelectorRequirement",
    &[
        f(1, "key", String, Single, Always),
        f(2, "operator", String, Single, Always),
        f(3, "values", String, List, Omit),
    ],
);

/// `core/v1 PodSpec`.
pub(super) static POD_SPEC: Message = Message::new(
    "PodSpec",
    &[
        f(1, "volumes", Object(&VOLUME), List, Omit),
        f(20, "initContainers", Object(&CONTAINER), List, Omit),
        f(2, "containers", Object(&CONTAINER), List, Always),
        f(
            34,
            "ephemeralContainers",
            Object(&EPHEMERAL_CONTAINER),
            List,
            Omit,
        ),
        f(3, "restartPolicy", String, Single, Omit),
        f(4, "terminationGracePeriodSeconds", Int, Single, Optional),
        f(5, "activeDeadlineSeconds", Int, Single, Optional),
        f(6, "dnsPolicy", String, Single, Omit),
        f(7, "nodeSelector", String, Map, Omit),
        f(8, "serviceAccountName", String, Single, Omit),
        f(9, "serviceAccount", String, Single, Omit),
        f(21, "automountServiceAccountToken", Bool, Single, Optional),
        f(10, "nodeName", String, Single, Omit),
        f(11, "hostNetwork", Bool, Single, Omit),
        f(12, "hostPID", Bool, Single, Omit),
        f(13, "hostIPC", Bool, Single, Omit),
        f(27, "shareProcessNamespace", Bool, Single, Optional),
        f(
            14,
            "securityContext",
            Object(&POD_SECURITY_CONTEXT),
            Single,
            Optional,
        ),
        f(
            15,
            "imagePullSecrets",
            Object(&LOCAL_OBJECT_REFERENCE),
            List,
            Omit,
        ),
        f(16, "hostname", String, Single, Omit),
        f(17, "subdomain", String, Single, Omit),
        f(18, "affinity", Object(&AFFINITY), Single, Optional),
        f(19, "schedulerName", String, Single, Omit),
        f(22, "tolerations", Object(&TOLERATION), List, Omit),
        f(23, "hostAliases", Object(&HOST_ALIAS), List, Omit),
        f(24, "priorityClassName", String, Single, Omit),
        f(25, "priority", Int, Single, Optional),
        f(26, "dnsConfig", Object(&POD_DNS_CONFIG), Single, Optional),
        f(
            28,
            "readinessGates",
            Object(&POD_READINESS_GATE),
            List,
            Omit,
        ),
        f(29, "runtimeClassName", String, Single, Optional),
        f(30, "enableServiceLinks", Bool, Single, Optional),
        f(31, "preemptionPolicy", String, Single, Optional),
        f(32, "overhead", Quantity, Map, Omit),
        f(
            33,
            "topologySpreadConstraints",
            Object(&TOPOLOGY_SPREAD_CONSTRAINT),
            List,
            Omit,
        ),
        f(35, "setHostnameAsFQDN", Bool, Single, Optional),
        f(36, "os", Object(&POD_OS), Single, Optional),
        f(37, "hostUsers", Bool, Single, Optional),
        f(
            38,
            "schedulingGates",
            Object(&POD_SCHEDULING_GATE),
            List,
            Omit,
        ),
        f(
            39,
            "resourceClaims",
            Object(&POD_RESOURCE_CLAIM),
            List,
            Omit,
        ),
        f(
            40,
            "resources",
            Object(&RESOURCE_REQUIREMENTS),
            Single,
            Optional,
        ),
        f(41, "hostnameOverride", String, Single, Optional),
        f(
            43,
            "schedulingGroup",
            Object(&POD_SCHEDULING_GROUP),
            Single,
            Optional,
        ),
        f(
            44,
            "evictionResponders",
            Object(&EVICTION_RESPONDER),
            List,
            Omit,
        ),
    ],
);

/// `apps/v1 RollingUpdateDeployment`.
pub(super) static ROLLING_UPDATE_DEPLOYMENT: Message = Message::new(
    "RollingUpdateDeployment",
    &[
        f(1, "maxUnavailable", IntOrString, Single, Optional),
        f(2, "maxSurge", IntOrString, Single, Optional),
    ],
);

/// `authorization/v1 FieldSelectorAttributes`.
pub(super) static FIELD_SELECTOR_ATTRIBUTES: Message = Message::new(
    "FieldSelectorAttributes",
    &[
        f(1, "rawSelector", String, Single, Omit),
        f(
            2,
            "requirements",
            Object(&FIELD_SELECTOR_REQUIREMENT),
            List,
            Omit,
        ),
    ],
);

/// `authorization/v1 LabelSelectorAttributes`.
pub(super) static LABEL_SELECTOR_ATTRIBUTES: Message = Message::new(
    "LabelSelectorAttributes",
    &[
        f(1, "rawSelector", String, Single, Omit),
        f(
            2,
            "requirements",
            Object(&LABEL_SELECTOR_REQUIREMENT),
            List,
            Omit,
        ),
    ],
);

/// `batch/v1 PodFailurePolicyRule`.
pub(super) static POD_FAILURE_POLICY_RULE: Message = Message::new(
    "PodFailurePolicyRule",
    &[
        f(1, "action", String, Single, Always),
        f(
            2,
            "onExitCodes",
            Object(&POD_FAILURE_POLICY_ON_EXIT_CODES_REQUIREMENT),
            Single,
            Optional,
        ),
        f(
            3,
            "onPodConditions",
            Object(&POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERN),
            List,
            Omit,
        ),
    ],
);

/// `batch/v1 SuccessPolicyRule`.
pub(super) static SUCCESS_POLICY_RULE: Message = Message::new(
    "SuccessPolicyRule",
    &[
        f(1, "succeededIndexes", String, Single, Optional),
        f(2, "succeededCount", Int, Single, Optional),
    ],
);

/// `scheduling/v1alpha3 WorkloadPodGroupSchedulingPolicy`.
pub(super) static WORKLOAD_POD_GROUP_SCHEDULING_POLICY: Message = Message::new(
    "WorkloadPodGroupSchedulingPolicy",
    &[
        f(
            1,
            "basic",
            Object(&WORKLOAD_POD_GROUP_BASIC_SCHEDULING_POLICY),
            Single,
            Optional,
        ),
        f(
            2,
            "gang",
            Object(&WORKLOAD_POD_GROUP_GANG_SCHEDULING_POLICY),
            Single,
            Optional,
        ),
    ],
);

/// `scheduling/v1alpha3 WorkloadPodGroupSchedulingConstraints`.
pub(super) static WORKLOAD_POD_GROUP_SCHEDULING_CONSTRAINTS: Message = Message::new(
    "WorkloadPodGroupSchedulingConstraints",
    &[f(1, "topology", Object(&TOPOLOGY_CONSTRAINT), List, Omit)],
);

/// `scheduling/v1alpha3 WorkloadPodGroupDisruptionMode`.
pub(super) static WORKLOAD_POD_GROUP_DISRUPTION_MODE: Message = Message::new(
    "WorkloadPodGroupDisruptionMode",
    &[
        f(
            1,
            "single",
            Object(&WORKLOAD_POD_GROUP_SINGLE_DISRUPTION_MODE),
            Single,
            Optional,
        ),
        f(
            2,
            "all",
            Object(&WORKLOAD_POD_GROUP_ALL_DISRUPTION_MODE),
            Single,
            Optional,
        ),
    ],
);

/// `scheduling/v1alpha3 WorkloadPodGroupResourceClaim`.
pub(super) static WORKLOAD_POD_GROUP_RESOURCE_CLAIM: Message = Message::new(
    "WorkloadPodGroupResourceClaim",
    &[
        f(1, "name", String, Single, Always),
        f(2, "resourceClaimName", String, Single, Optional),
        f(3, "resourceClaimTemplateName", String, Single, Optional),
    ],
);

/// `core/v1 ClientIPConfig`.
pub(super) static CLIENT_IP_CONFIG: Message = Message::new(
    "ClientIPConfig",
    &[f(1, "timeoutSeconds", Int, Single, Optional)],
);

/// `core/v1 LoadBalancerIngress`.
pub(super) static LOAD_BALANCER_INGRESS: Message = Message::new(
    "LoadBalancerIngress",
    &[
        f(1, "ip", String, Single, Omit),
        f(2, "hostname", String, Single, Omit),
        f(3, "ipMode", String, Single, Optional),
        f(4, "ports", Object(&PORT_STATUS), List, Omit),
    ],
);

/// `core/v1 ScopedResourceSelectorRequirement`.
pub(super) static SCOPED_RESOURCE_SELECTOR_REQUIREMENT: Message = Message::new(
    "ScopedResourceSelectorRequirement",
    &[
        f(1, "scopeName", String, Single, Always),
        f(2, "operator", String, Single, Always),
        f(3, "values", String, List, Omit),
    ],
);

/// `networking/v1 IngressServiceBackend`.
pub(super) static INGRESS_SERVICE_BACKEND: Message = Message::new(
    "IngressServiceBackend",
    &[
        f(1, "name", String, Single, Always),
        f(2, "port", Object(&SERVICE_BACKEND_PORT), Single, Omit),
    ],
);

/// `core/v1 TypedLocalObjectReference`.
pub(super) static TYPED_LOCAL_OBJECT_REFERENCE: Message = Message::new(
    "TypedLocalObjectReference",
    &[
        f(1, "apiGroup", String, Single, Nullable),
        f(2, "kind", String, Single, Always),
        f(3, "name", String, Single, Always),
    ],
);

/// `networking/v1 IngressRuleValue`.
pub(super) static INGRESS_RULE_VALUE: Message = Message::new(
    "IngressRuleValue",
    &[f(
        1,
        "http",
        Object(&HTTP_INGRESS_RULE_VALUE),
        Single,
        Optional,
    )],
);

/// `networking/v1 IngressLoadBalancerIngress`.
pub(super) static INGRESS_LOAD_BALANCER_INGRESS: Message = Message::new(
    "IngressLoadBalancerIngress",
    &[
        f(1, "ip", String, Single, Omit),
        f(2, "hostname", String, Single, Omit),
        f(4, "ports", Object(&INGRESS_PORT_STATUS), List, Omit),
    ],
);

/// `core/v1 Volume`.
pub(super) static VOLUME: Message = Message::new(
    "Volume",
    &[
        f(1, "name", String, Single, Always),
        f(2, "", Object(&VOLUME_SOURCE), Single, Inline),
    ],
);

/// `core/v1 Container`.
pub(super) static CONTAINER: Message = Message::new(
    "Container",
    &[
        f(1, "name", String, Single, Always),
        f(2, "image", String, Single, Omit),
        f(3, "command", String, List, Omit),
        f(4, "args", String, List, Omit),
        f(5, "workingDir", String, Single, Omit),
        f(6, "ports", Object(&CONTAINER_PORT), List, Omit),
        f(19, "envFrom", Object(&ENV_FROM_SOURCE), List, Omit),
        f(7, "env", Object(&ENV_VAR), List, Omit),
        f(8, "resources", Object(&RESOURCE_REQUIREMENTS), Single, Omit),
        f(
            23,
            "resizePolicy",
            Object(&CONTAINER_RESIZE_POLICY),
            List,
            Omit,
        ),
        f(24, "restartPolicy", String, Single, Optional),
        f(
            25,
            "restartPolicyRules",
            Object(&CONTAINER_RESTART_RULE),
            List,
            Omit,
        ),
        f(9, "volumeMounts", Object(&VOLUME_MOUNT), List, Omit),
        f(21, "volumeDevices", Object(&VOLUME_DEVICE), List, Omit),
        f(10, "livenessProbe", Object(&PROBE), Single, Optional),
        f(11, "readinessProbe", Object(&PROBE), Single, Optional),
        f(22, "startupProbe", Object(&PROBE), Single, Optional),
        f(12, "lifecycle", Object(&LIFECYCLE), Single, Optional),
        f(13, "terminationMessagePath", String, Single, Omit),
        f(20, "terminationMessagePolicy", String, Single, Omit),
        f(14, "imagePullPolicy", String, Single, Omit),
        f(
            15,
            "securityContext",
            Object(&SECURITY_CONTEXT),
            Single,
            Optional,
        ),
        f(16, "stdin", Bool, Single, Omit),
        f(17, "stdinOnce", Bool, Single, Omit),
        f(18, "tty", Bool, Single, Omit),
    ],
);

/// `core/v1 EphemeralContainer`.
pub(super) static EPHEMERAL_CONTAINER: Message = Message::new(
    "EphemeralContainer",
    &[
        f(1, "", Object(&EPHEMERAL_CONTAINER_COMMON), Single, Inline),
        f(2, "targetContainerName", String, Single, Omit),
    ],
);

/// `core/v1 PodSecurityContext`.
pub(super) static POD_SECURITY_CONTEXT: Message = Message::new(
    "PodSecurityContext",
    &[
        f(
            1,
            "seLinuxOptions",
            Object(&SE_LINUX_OPTIONS),
            Single,
            Optional,
        ),
        f(
            8,
            "windowsOptions",
            Object(&WINDOWS_SECURITY_CONTEXT_OPTIONS),
            Single,
            Optional,
        ),
        f(2, "runAsUser", Int, Single, Optional),
        f(6, "runAsGroup", Int, Single, Optional),
        f(3, "runAsNonRoot", Bool, Single, Optional),
        f(4, "supplementalGroups", Int, List, Omit),
        f(12, "supplementalGroupsPolicy", String, Single, Optional),
        f(5, "fsGroup", Int, Single, Optional),
        f(7, "sysctls", Object(&SYSCTL), List, Omit),
        f(9, "fsGroupChangePolicy", String, Single, Optional),
        f(
            10,
            "seccompProfile",
            Object(&SECCOMP_PROFILE),
            Single,
            Optional,
        ),
        f(
            11,
            "appArmorProfile",
            Object(&APP_ARMOR_PROFILE),
            Single,
            Optional,
        ),
        f(13, "seLinuxChangePolicy", String, Single, Optional),
    ],
);

/// `core/v1 Affinity`.
pub(super) static AFFINITY: Message = Message::new(
    "Affinity",
    &[
        f(1, "nodeAffinity", Object(&NODE_AFFINITY), Single, Optional),
        f(2, "podAffinity", Object(&POD_AFFINITY), Single, Optional),
        f(
            3,
            "podAntiAffinity",
            Object(&POD_ANTI_AFFINITY),
            Single,
            Optional,
        ),
    ],
);

/// `core/v1 Toleration`.
pub(super) static TOLERATION: Message = Message::new(
    "Toleration",
    &[
        f(1, "key", String, Single, Omit),
        f(2, "operator", String, Single, Omit),
        f(3, "value", String, Single, Omit),
        f(4, "effect", String, Single, Omit),
        f(5, "tolerationSeconds", Int, Single, Optional),
    ],
);

/// `core/v1 HostAlias`.
pub(super) static HOST_ALIAS: Message = Message::new(
    "HostAlias",
    &[
        f(1, "ip", String, Single, Always),
        f(2, "hostnames", String, List, Omit),
    ],
);

/// `core/v1 PodDNSConfig`.
pub(super) static POD_DNS_CONFIG: Message = Message::new(
    "PodDNSConfig",
    &[
        f(1, "nameservers", String, List, Omit),
        f(2, "searches", String, List, Omit),
        f(3, "options", Object(&POD_DNS_CONFIG_OPTION), List, Omit),
    ],
);

/// `core/v1 PodReadinessGate`.
pub(super) static POD_READINESS_GATE: Message = Message::new(
    "PodReadinessGate",
    &[f(1, "conditionType", String, Single, Always)],
);

/// `core/v1 TopologySpreadConstraint`.
pub(super) static TOPOLOGY_SPREAD_CONSTRAINT: Message = Message::new(
    "TopologySpreadConstraint",
    &[
        f(1, "maxSkew", Int, Single, Always),
        f(2, "topologyKey", String, Single, Always),
        f(3, "whenUnsatisfiable", String, Single, Always),
        f(
            4,
            "labelSelector",
            Object(&LABEL_SELECTOR),
            Single,
            Optional,
        ),
        f(5, "minDomains", Int, Single, Optional),
        f(6, "nodeAffinityPolicy", String, Single, Optional),
        f(7, "nodeTaintsPolicy", String, Single, Optional),
        f(8, "matchLabelKeys", String, List, Omit),
    ],
);

/// `core/v1 PodOS`.
pub(super) static POD_OS: Message = Message::new("PodOS", &[f(1, "name", String, Single, Always)]);

/// `core/v1 PodSchedulingGate`.
pub(super) static POD_SCHEDULING_GATE: Message =
    Message::new("PodSchedulingGate", &[f(1, "name", String, Single, Always)]);

/// `core/v1 PodResourceClaim`.
pub(super) static POD_RESOURCE_CLAIM: Message = Message::new(
    "PodResourceClaim",
    &[
        f(1, "name", String, Single, Always),
        f(3, "resourceClaimName", String, Single, Optional),
        f(4, "resourceClaimTemplateName", String, Single, Optional),
    ],
);

/// `core/v1 ResourceRequirements`.
pub(super) static RESOURCE_REQUIREMENTS: Message = Message::new(
    "ResourceRequirements",
    &[
        f(1, "limits", Quantity, Map, Omit),
        f(2, "requests", Quantity, Map, Omit),
        f(3, "claims", Object(&RESOURCE_CLAIM), List, Omit),
    ],
);

/// `core/v1 PodSchedulingGroup`.
pub(super) static POD_SCHEDULING_GROUP: Message = Message::new(
    "PodSchedulingGroup",
    &[f(1, "podGroupName", String, Single, Optional)],
);

/// `core/v1 EvictionResponder`.
pub(super) static EVICTION_RESPONDER: Message = Message::new(
    "EvictionResponder",
    &[
        f(1, "name", String, Single, Always),
        f(2, "priority", Int, Single, Nullable),
    ],
);

/// `meta/v1 FieldSelectorRequirement`.
pub(super) static FIELD_SELECTOR_REQUIREMENT: Message = Message::new(
    "FieldSelectorRequirement",
    &[
        f(1, "key", String, Single, Always),
        f(2, "operator", String, Single, Always),
        f(3, "values", String, List, Omit),
    ],
);

/// `batch/v1 PodFailurePolicyOnExitCodesRequirement`.
pub(super) static POD_FAILURE_POLICY_ON_EXIT_CODES_REQUIREMENT: Message = Message::new(
    "PodFailurePolicyOnExitCodesRequirement",
    &[
        f(1, "containerName", String, Single, Optional),
        f(2, "operator", String, Single, Always),
        f(3, "values", Int, List, Always),
    ],
);

/// `batch/v1 PodFailurePolicyOnPodConditionsPattern`.
pub(super) static POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERN: Message = Message::new(
    "PodFailurePolicyOnPodConditionsPattern",
    &[
        f(1, "type", String, Single, Always),
        f(2, "status", String, Single, Always),
    ],
);

/// `scheduling/v1alpha3 WorkloadPodGroupBasicSchedulingPolicy`.
pub(super) static WORKLOAD_POD_GROUP_BASIC_SCHEDULING_POLICY: Message =
    Message::new("WorkloadPodGroupBasicSchedulingPolicy", &[]);

/// `scheduling/v1alpha3 WorkloadPodGroupGangSchedulingPolicy`.
pub(super) static WORKLOAD_POD_GROUP_GANG_SCHEDULING_POLICY: Message = Message::new(
    "WorkloadPodGroupGangSchedulingPolicy",
    &[f(1, "minCount", Int, Single, Optional)],
);

/// `scheduling/v1alpha3 TopologyConstraint`.
pub(super) static TOPOLOGY_CONSTRAINT: Message =
    Message::new("TopologyConstraint", &[f(1, "key", String, Single, Always)]);

/// `scheduling/v1alpha3 WorkloadPodGroupSingleDisruptionMode`.
pub(super) static WORKLOAD_POD_GROUP_SINGLE_DISRUPTION_MODE: Message =
    Message::new("WorkloadPodGroupSingleDisruptionMode", &[]);

/// `scheduling/v1alpha3 WorkloadPodGroupAllDisruptionMode`.
pub(super) static WORKLOAD_POD_GROUP_ALL_DISRUPTION_MODE: Message =
    Message::new("WorkloadPodGroupAllDisruptionMode", &[]);

/// `core/v1 PortStatus`.
pub(super) static PORT_STATUS: Message = Message::new(
    "PortStatus",
    &[
        f(1, "port", Int, Single, Always),
        f(2, "protocol", String, Single, Always),
        f(3, "error", String, Single, Optional),
    ],
);

/// `networking/v1 ServiceBackendPort`.
pub(super) static SERVICE_BACKEND_PORT: Message = Message::new(
    "ServiceBackendPort",
    &[
        f(1, "name", String, Single, Omit),
        f(2, "number", Int, Single, Omit),
    ],
);

/// `networking/v1 HTTPIngressRuleValue`.
pub(super) static HTTP_INGRESS_RULE_VALUE: Message = Message::new(
    "HTTPIngressRuleValue",
    &[f(1, "paths", Object(&HTTP_INGRESS_PATH), List, Always)],
);

/// `networking/v1 IngressPortStatus`.
pub(super) static INGRESS_PORT_STATUS: Message = Message::new(
    "IngressPortStatus",
    &[
        f(1, "port", Int, Single, Always),
        f(2, "protocol", String, Single, Always),
        f(3, "error", String, Single, Optional),
    ],
);

/// `core/v1 VolumeSource`.
pub(super) static VOLUME_SOURCE: Message = Message::new(
    "VolumeSource",
    &[
        f(
            1,
            "hostPath",
            Object(&HOST_PATH_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            2,
            "emptyDir",
            Object(&EMPTY_DIR_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            3,
            "gcePersistentDisk",
            Object(&GCE_PERSISTENT_DISK_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            4,
            "awsElasticBlockStore",
            Object(&AWS_ELASTIC_BLOCK_STORE_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            5,
            "gitRepo",
            Object(&GIT_REPO_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(6, "secret", Object(&SECRET_VOLUME_SOURCE), Single, Optional),
        f(7, "nfs", Object(&NFS_VOLUME_SOURCE), Single, Optional),
        f(8, "iscsi", Object(&ISCSI_VOLUME_SOURCE), Single, Optional),
        f(
            9,
            "glusterfs",
            Object(&GLUSTERFS_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            10,
            "persistentVolumeClaim",
            Object(&PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(11, "rbd", Object(&RBD_VOLUME_SOURCE), Single, Optional),
        f(
            12,
            "flexVolume",
            Object(&FLEX_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            13,
            "cinder",
            Object(&CINDER_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            14,
            "cephfs",
            Object(&CEPH_FS_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            15,
            "flocker",
            Object(&FLOCKER_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            16,
            "downwardAPI",
            Object(&DOWNWARD_API_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(17, "fc", Object(&FC_VOLUME_SOURCE), Single, Optional),
        f(
            18,
            "azureFile",
            Object(&AZURE_FILE_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            19,
            "configMap",
            Object(&CONFIG_MAP_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            20,
            "vsphereVolume",
            Object(&VSPHERE_VIRTUAL_DISK_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            21,
            "quobyte",
            Object(&QUOBYTE_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            22,
            "azureDisk",
            Object(&AZURE_DISK_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            23,
            "photonPersistentDisk",
            Object(&PHOTON_PERSISTENT_DISK_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            26,
            "projected",
            Object(&PROJECTED_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            24,
            "portworxVolume",
            Object(&PORTWORX_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            25,
            "scaleIO",
            Object(&SCALE_IO_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(
            27,
            "storageos",
            Object(&STORAGE_OS_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(28, "csi", Object(&CSI_VOLUME_SOURCE), Single, Optional),
        f(
            29,
            "ephemeral",
            Object(&EPHEMERAL_VOLUME_SOURCE),
            Single,
            Optional,
        ),
        f(30, "image", Object(&IMAGE_VOLUME_SOURCE), Single, Optional),
    ],
);

/// `core/v1 ContainerPort`.
pub(super) static CONTAINER_PORT: Message = Message::new(
    "ContainerPort",
    &[
        f(1, "name", String, Single, Omit),
        f(2, "hostPort", Int, Single, Omit),
        f(3, "containerPort", Int, Single, Always),
        f(4, "protocol", String, Single, Omit),
        f(5, "hostIP", String, Single, Omit),
    ],
);

/// `core/v1 EnvFromSource`.
pub(super) static ENV_FROM_SOURCE: Message = Message::new(
    "EnvFromSource",
    &[
        f(1, "prefix", String, Single, Omit),
        f(
            2,
            "configMapRef",
            Object(&CONFIG_MAP_ENV_SOURCE),
            Single,
            Optional,
        ),
        f(3, "secretRef", Object(&SECRET_ENV_SOURCE), Single, Optional),
    ],
);

/// `core/v1 EnvVar`.
pub(super) static ENV_VAR: Message = Message::new(
    "EnvVar",
    &[
        f(1, "name", String, Single, Always),
        f(2, "value", String, Single, Omit),
        f(3, "valueFrom", Object(&ENV_VAR_SOURCE), Single, Optional),
    ],
);

/// `core/v1 ContainerResizePolicy`.
pub(super) static CONTAINER_RESIZE_POLICY: Message = Message::new(
    "ContainerResizePolicy",
    &[
        f(1, "resourceName", String, Single, Always),
        f(2, "restartPolicy", String, Single, Always),
    ],
);

/// `core/v1 ContainerRestartRule`.
pub(super) static CONTAINER_RESTART_RULE: Message = Message::new(
    "ContainerRestartRule",
    &[
        f(1, "action", String, Single, Omit),
        f(
            2,
            "exitCodes",
            Object(&CONTAINER_RESTART_RULE_ON_EXIT_CODES),
            Single,
            Optional,
        ),
    ],
);

/// `core/v1 VolumeMount`.
pub(super) static VOLUME_MOUNT: Message = Message::new(
    "VolumeMount",
    &[
        f(1, "name", String, Single, Always),
        f(2, "readOnly", Bool, Single, Omit),
        f(7, "recursiveReadOnly", String, Single, Optional),
        f(3, "mountPath", String, Single, Always),
        f(4, "subPath", String, Single, Omit),
        f(5, "mountPropagation", String, Single, Optional),
        f(6, "subPathExpr", String, Single, Omit),
        f(8, "bindMountOptions", String, List, Omit),
    ],
);

/// `core/v1 VolumeDevice`.
pub(super) static VOLUME_DEVICE: Message = Message::new(
    "VolumeDevice",
    &[
        f(1, "name", String, Single, Always),
        f(2, "devicePath", String, Single, Always),
    ],
);

/// `core/v1 Probe`.
pub(super) static PROBE: Message = Message::new(
    "Probe",
    &[
        f(1, "", Object(&PROBE_HANDLER), Single, Inline),
        f(2, "initialDelaySeconds", Int, Single, Omit),
        f(3, "timeoutSeconds", Int, Single, Omit),
        f(4, "periodSeconds", Int, Single, Omit),
        f(5, "successThreshold", Int, Single, Omit),
        f(6, "failureThreshold", Int, Single, Omit),
        f(7, "terminationGracePeriodSeconds", Int, Single, Optional),
    ],
);

/// `core/v1 Lifecycle`.
pub(super) static LIFECYCLE: Message = Message::new(
    "Lifecycle",
    &[
        f(1, "postStart", Object(&LIFECYCLE_HANDLER), Single, Optional),
        f(2, "preStop", Object(&LIFECYCLE_HANDLER), Single, Optional),
        f(3, "stopSignal", String, Single, Optional),
    ],
);

/// `core/v1 SecurityContext`.
pub(super) static SECURITY_CONTEXT: Message = Message::new(
    "SecurityContext",
    &[
        f(1, "capabilities", Object(&CAPABILITIES), Single, Optional),
        f(2, "privileged", Bool, Single, Optional),
        f(
            3,
            "seLinuxOptions",
            Object(&SE_LINUX_OPTIONS),
            Single,
            Optional,
        ),
        f(
            10,
            "windowsOptions",
            Object(&WINDOWS_SECURITY_CONTEXT_OPTIONS),
            Single,
            Optional,
        ),
        f(4, "runAsUser", Int, Single, Optional),
        f(8, "runAsGroup", Int, Single, Optional),
        f(5, "runAsNonRoot", Bool, Single, Optional),
        f(6, "readOnlyRootFilesystem", Bool, Single, Optional),
        f(7, "allowPrivilegeEscalation", Bool, Single, Optional),
        f(9, "procMount", String, Single, Optional),
        f(
            11,
            "seccompProfile",
            Object(&SECCOMP_PROFILE),
            Single,
            Optional,
        ),
        f(
            12,
            "appArmorProfile",
            Object(&APP_ARMOR_PROFILE),
            Single,
            Optional,
        ),
    ],
);

/// `core/v1 EphemeralContainerCommon`.
pub(super) static EPHEMERAL_CONTAINER_COMMON: Message = Message::new(
    "EphemeralContainerCommon",
    &[
        f(1, "name", String, Single, Always),
        f(2, "image", String, Single, Omit),
        f(3, "command", String, List, Omit),
        f(4, "args", String, List, Omit),
        f(5, "workingDir", String, Single, Omit),
        f(6, "ports", Object(&CONTAINER_PORT), List, Omit),
        f(19, "envFrom", Object(&ENV_FROM_SOURCE), List, Omit),
        f(7, "env", Object(&ENV_VAR), List, Omit),
        f(8, "resources", Object(&RESOURCE_REQUIREMENTS), Single, Omit),
        f(
            23,
            "resizePolicy",
            Object(&CONTAINER_RESIZE_POLICY),
            List,
            Omit,
        ),
        f(24, "restartPolicy", String, Single, Optional),
        f(
            25,
            "restartPolicyRules",
            Object(&CONTAINER_RESTART_RULE),
            List,
            Omit,
        ),
        f(9, "volumeMounts", Object(&VOLUME_MOUNT), List, Omit),
        f(21, "volumeDevices", Object(&VOLUME_DEVICE), List, Omit),
        f(10, "livenessProbe", Object(&PROBE), Single, Optional),
        f(11, "readinessProbe", Object(&PROBE), Single, Optional),
        f(22, "startupProbe", Object(&PROBE), Single, Optional),
        f(12, "lifecycle", Object(&LIFECYCLE), Single, Optional),
        f(13, "terminationMessagePath", String, Single, Omit),
        f(20, "terminationMessagePolicy", String, Single, Omit),
        f(14, "imagePullPolicy", String, Single, Omit),
        f(
            15,
            "securityContext",
            Object(&SECURITY_CONTEXT),
            Single,
            Optional,
        ),
        f(16, "stdin", Bool, Single, Omit),
        f(17, "stdinOnce", Bool, Single, Omit),
        f(18, "tty", Bool, Single, Omit),
    ],
);

/// `core/v1 SELinuxOptions`.
pub(super) static SE_LINUX_OPTIONS: Message = Message::new(
    "SELinuxOptions",
    &[
        f(1, "user", String, Single, Omit),
        f(2, "role", String, Single, Omit),
        f(3, "type", String, Single, Omit),
        f(4, "level", String, Single, Omit),
    ],
);

/// `core/v1 WindowsSecurityContextOptions`.
pub(super) static WINDOWS_SECURITY_CONTEXT_OPTIONS: Message = Message::new(
    "WindowsSecurityContextOptions",
    &[
        f(1, "gmsaCredentialSpecName", String, Single, Optional),
        f(2, "gmsaCredentialSpec", String, Single, Optional),
        f(3, "runAsUserName", String, Single, Optional),
        f(4, "hostProcess", Bool, Single, Optional),
    ],
);

/// `core/v1 Sysctl`.
pub(super) static SYSCTL: Message = Message::new(
    "Sysctl",
    &[
        f(1, "name", String, Single, Always),
        f(2, "value", String, Single, Always),
    ],
);

/// `core/v1 SeccompProfile`.
pub(super) static SECCOMP_PROFILE: Message = Message::new(
    "SeccompProfile",
    &[
        f(1, "type", String, Single, Always),
        f(2, "localhostProfile", String, Single, Optional),
    ],
);

/// `core/v1 AppArmorProfile`.
pub(super) static APP_ARMOR_PROFILE: Message = Message::new(
    "AppArmorProfile",
    &[
        f(1, "type", String, Single, Always),
        f(2, "localhostProfile", String, Single, Optional),
    ],
);

/// `core/v1 NodeAffinity`.
pub(super) static NODE_AFFINITY: Message = Message::new(
    "NodeAffinity",
    &[
        f(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            Object(&NODE_SELECTOR),
            Single,
            Optional,
        ),
        f(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            Object(&PREFERRED_SCHEDULING_TERM),
            List,
            Omit,
        ),
    ],
);

/// `core/v1 PodAffinity`.
pub(super) static POD_AFFINITY: Message = Message::new(
    "PodAffinity",
    &[
        f(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            Object(&POD_AFFINITY_TERM),
            List,
            Omit,
        ),
        f(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            Object(&WEIGHTED_POD_AFFINITY_TERM),
            List,
            Omit,
        ),
    ],
);

/// `core/v1 PodAntiAffinity`.
pub(super) static POD_ANTI_AFFINITY: Message = Message::new(
    "PodAntiAffinity",
    &[
        f(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            Object(&POD_AFFINITY_TERM),
            List,
            Omit,
        ),
        f(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            Object(&WEIGHTED_POD_AFFINITY_TERM),
            List,
            Omit,
        ),
    ],
);

/// `core/v1 PodDNSConfigOption`.
pub(super) static POD_DNS_CONFIG_OPTION: Message = Message::new(
    "PodDNSConfigOption",
    &[
        f(1, "name", String, Single, Omit),
        f(2, "value", String, Single, Optional),
    ],
);

/// `core/v1 ResourceClaim`.
pub(super) static RESOURCE_CLAIM: Message = Message::new(
    "ResourceClaim",
    &[
        f(1, "name", String, Single, Always),
        f(2, "request", String, Single, Omit),
    ],
);

/// `networking/v1 HTTPIngressPath`.
pub(super) static HTTP_INGRESS_PATH: Message = Message::new(
    "HTTPIngressPath",
    &[
        f(1, "path", String, Single, Omit),
        f(3, "pathType", String, Single, Nullable),
        f(2, "backend", Object(&INGRESS_BACKEND), Single, Always),
    ],
);

/// `core/v1 HostPathVolumeSource`.
pub(super) static HOST_PATH_VOLUME_SOURCE: Message = Message::new(
    "HostPathVolumeSource",
    &[
        f(1, "path", String, Single, Always),
        f(2, "type", String, Single, Optional),
    ],
);

/// `core/v1 EmptyDirVolumeSource`.
pub(super) static EMPTY_DIR_VOLUME_SOURCE: Message = Message::new(
    "EmptyDirVolumeSource",
    &[
        f(1, "medium", String, Single, Omit),
        f(2, "sizeLimit", Quantity, Single, Optional),
        f(3, "mode", Int, Single, Optional),
    ],
);

/// `core/v1 GCEPersistentDiskVolumeSource`.
pub(super) static GCE_PERSISTENT_DISK_VOLUME_SOURCE: Message = Message::new(
    "GCEPersistentDiskVolumeSource",
    &[
        f(1, "pdName", String, Single, Always),
        f(2, "fsType", String, Single, Omit),
        f(3, "partition", Int, Single, Omit),
        f(4, "readOnly", Bool, Single, Omit),
    ],
);

/// `core/v1 AWSElasticBlockStoreVolumeSource`.
pub(super) static AWS_ELASTIC_BLOCK_STORE_VOLUME_SOURCE: Message = Message::new(
    "AWSElasticBlockStoreVolumeSource",
    &[
        f(1, "volumeID", String, Single, Always),
        f(2, "fsType", String, Single, Omit),
        f(3, "partition", Int, Single, Omit),
        f(4, "readOnly", Bool, Single, Omit),
    ],
);

/// `core/v1 GitRepoVolumeSource`.
pub(super) static GIT_REPO_VOLUME_SOURCE: Message = Message::new(
    "GitRepoVolumeSource",
    &[
        f(1, "repository", String, Single, Always),
        f(2, "revision", String, Single, Omit),
        f(3, "directory", String, Single, Omit),
    ],
);

/// `core/v1 SecretVolumeSource`.
pub(super) static SECRET_VOLUME_SOURCE: Message = Message::new(
    "SecretVolumeSource",
    &[
        f(1, "secretName", String, Single, Omit),
        f(2, "items", Object(&KEY_TO_PATH), List, Omit),
        f(3, "defaultMode", Int, Single, Optional),
        f(4, "optional", Bool, Single, Optional),
        f(5, "defaultUser", Int, Single, Optional),
    ],
);

/// `core/v1 NFSVolumeSource`.
pub(super) static NFS_VOLUME_SOURCE: Message = Message::new(
    "NFSVolumeSource",
    &[
        f(1, "server", String, Single, Always),
        f(2, "path", String, Single, Always),
        f(3, "readOnly", Bool, Single, Omit),
    ],
);

/// `core/v1 ISCSIVolumeSource`.
pub(super) static ISCSI_VOLUME_SOURCE: Message = Message::new(
    "ISCSIVolumeSource",
    &[
        f(1, "targetPortal", String, Single, Always),
        f(2, "iqn", String, Single, Always),
        f(3, "lun", Int, Single, Always),
        f(4, "iscsiInterface", String, Single, Omit),
        f(5, "fsType", String, Single, Omit),
        f(6, "readOnly", Bool, Single, Omit),
        f(7, "portals", String, List, Omit),
        f(8, "chapAuthDiscovery", Bool, Single, Omit),
        f(11, "chapAuthSession", Bool, Single, Omit),
        f(
            10,
            "secretRef",
            Object(&LOCAL_OBJECT_REFERENCE),
            Single,
            Optional,
        ),
        f(12, "initiatorName", String, Single, Optional),
    ],
);

/// `core/v1 GlusterfsVolumeSource`.
pub(super) static GLUSTERFS_VOLUME_SOURCE: Message = Message::new(
    "GlusterfsVolumeSource",
    &[
        f(1, "endpoints", String, Single, Always),
        f(2, "path", String, Single, Always),
        f(3, "readOnly", Bool, Single, Omit),
    ],
);

/// `core/v1 PersistentVolumeClaimVolumeSource`.
pub(super) static PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE: Message = Message::new(
    "PersistentVolumeClaimVolumeSource",
    &[
        f(1, "claimName", String, Single, Always),
        f(2, "readOnly", Bool, Single, Omit),
    ],
);

/// `core/v1 RBDVolumeSource`.
pub(super) static RBD_VOLUME_SOURCE: Message = Message::new(
    "RBDVolumeSource",
    &[
        f(1, "monitors", String, List, Always),
        f(2, "image", String, Single, Always),
        f(3, "fsType", String, Single, Omit),
        f(4, "pool", String, Single, Omit),
        f(5, "user", String, Single, Omit),
        f(6, "keyring", String, Single, Omit),
        f(
            7,
            "secretRef",
            Object(&LOCAL_OBJECT_REFERENCE),
            Single,
            Optional,
        ),
        f(8, "readOnly", Bool, Single, Omit),
    ],
);

/// `core/v1 FlexVolumeSource`.
pub(super) static FLEX_VOLUME_SOURCE: Message = Message::new(
    "FlexVolumeSource",
    &[
        f(1, "driver", String, Single, Always),
        f(2, "fsType", String, Single, Omit),
        f(
            3,
            "secretRef",
            Object(&LOCAL_OBJECT_REFERENCE),
            Single,
            Optional,
        ),
        f(4, "readOnly", Bool, Single, Omit),
        f(5, "options", String, Map, Omit),
    ],
);

/// `core/v1 CinderVolumeSource`.
pub(super) static CINDER_VOLUME_SOURCE: Message = Message::new(
    "CinderVolumeSource",
    &[
        f(1, "volumeID", String, Single, Always),
        f(2, "fsType", String, Single, Omit),
        f(3, "readOnly", Bool, Single, Omit),
        f(
            4,
            "secretRef",
            Object(&LOCAL_OBJECT_REFERENCE),
            Single,
            Optional,
        ),
    ],
);

/// `core/v1 CephFSVolumeSource`.
pub(super) static CEPH_FS_VOLUME_SOURCE: Message = Message::new(
    "CephFSVolumeSource",
    &[
        f(1, "monitors", String, List, Always),
        f(2, "path", String, Single, Omit),
        f(3, "user", String, Single, Omit),
        f(4, "secretFile", String, Single, Omit),
        f(
            5,
            "secretRef",
            Object(&LOCAL_OBJECT_REFERENCE),
            Single,
            Optional,
        ),
        f(6, "readOnly", Bool, Single, Omit),
    ],
);

/// `core/v1 FlockerVolumeSource`.
pub(super) static FLOCKER_VOLUME_SOURCE: Message = Message::new(
    "FlockerVolumeSource",
    &[
        f(1, "datasetName", String, Single, Omit),
        f(2, "datasetUUID", String, Single, Omit),
    ],
);

/// `core/v1 DownwardAPIVolumeSource`.
pub(super) static DOWNWARD_API_VOLUME_SOURCE: Message = Message::new(
    "DownwardAPIVolumeSource",
    &[
        f(1, "items", Object(&DOWNWARD_API_VOLUME_FILE), List, Omit),
        f(2, "defaultMode", Int, Single, Optional),
        f(3, "defaultUser", Int, Single, Optional),
    ],
);

/// `core/v1 FCVolumeSource`.
pub(super) static FC_VOLUME_SOURCE: Message = Message::new(
    "FCVolumeSource",
    &[
        f(1, "targetWWNs", String, List, Omit),
        f(2, "lun", Int, Single, Optional),
        f(3, "fsType", String, Single, Omit),
        f(4, "readOnly", Bool, Single, Omit),
        f(5, "wwids", String, List, Omit),
    ],
);

/// `core/v1 AzureFileVolumeSource`.
pub(super) static AZURE_FILE_VOLUME_SOURCE: Message = Message::new(
    "AzureFileVolumeSource",
    &[
        f(1, "secretName", String, Single, Always),
        f(2, "shareName", String, Single, Always),
        f(3, "readOnly", Bool, Single, Omit),
    ],
);

/// `core/v1 ConfigMapVolumeSource`.
pub(super) static CONFIG_MAP_VOLUME_SOURCE: Message = Message::new(
    "ConfigMapVolumeSource",
    &[
        f(1, "", Object(&LOCAL_OBJECT_REFERENCE), Single, Inline),
        f(2, "items", Object(&KEY_TO_PATH), List, Omit),
        f(3, "defaultMode", Int, Single, Optional),
        f(4, "optional", Bool, Single, Optional),
        f(5, "defaultUser", Int, Single, Optional),
    ],
);

/// `core/v1 VsphereVirtualDiskVolumeSource`.
pub(super) static VSPHERE_VIRTUAL_DISK_VOLUME_SOURCE: Message = Message::new(
    "VsphereVirtualDiskVolumeSource",
    &[
        f(1, "volumePath", String, Single, Always),
        f(2, "fsType", String, Single, Omit),
        f(3, "storagePolicyName", String, Single, Omit),
        f(4, "storagePolicyID", String, Single, Omit),
    ],
);

/// `core/v1 QuobyteVolumeSource`.
pub(super) static QUOBYTE_VOLUME_SOURCE: Message = Message::new(
    "QuobyteVolumeSource",
    &[
        f(1, "registry", String, Single, Always),
        f(2, "volume", String, Single, Always),
        f(3, "readOnly", Bool, Single, Omit),
        f(4, "user", String, Single, Omit),
        f(5, "group", String, Single, Omit),
        f(6, "tenant", String, Single, Omit),
    ],
);

/// `core/v1 AzureDiskVolumeSource`.
pub(super) static AZURE_DISK_VOLUME_SOURCE: Message = Message::new(
    "AzureDiskVolumeSource",
    &[
        f(1, "diskName", String, Single, Always),
        f(2, "diskURI", String, Single, Always),
        f(3, "cachingMode", String, Single, Optional),
        f(4, "fsType", String, Single, Optional),
        f(5, "readOnly", Bool, Single, Optional),
        f(6, "kind", String, Single, Optional),
    ],
);

/// `core/v1 PhotonPersistentDiskVolumeSource`.
pub(super) static PHOTON_PERSISTENT_DISK_VOLUME_SOURCE: Message = Message::new(
    "PhotonPersistentDiskVolumeSource",
    &[
        f(1, "pdID", String, Single, Always),
        f(2, "fsType", String, Single, Omit),
    ],
);

/// `core/v1 ProjectedVolumeSource`.
pub(super) static PROJECTED_VOLUME_SOURCE: Message = Message::new(
    "ProjectedVolumeSource",
    &[
        f(1, "sources", Object(&VOLUME_PROJECTION), List, Always),
        f(2, "defaultMode", Int, Single, Optional),
        f(3, "defaultUser", Int, Single, Optional),
    ],
);

/// `core/v1 PortworxVolumeSource`.
pub(super) static PORTWORX_VOLUME_SOURCE: Message = Message::new(
    "PortworxVolumeSource",
    &[
        f(1, "volumeID", String, Single, Always),
        f(2, "fsType", String, Single, Omit),
        f(3, "readOnly", Bool, Single, Omit),
    ],
);

/// `core/v1 ScaleIOVolumeSource`.
pub(super) static SCALE_IO_VOLUME_SOURCE: Message = Message::new(
    "ScaleIOVolumeSource",
    &[
        f(1, "gateway", String, Single, Always),
        f(2, "system", String, Single, Always),
        f(
            3,
            "secretRef",
            Object(&LOCAL_OBJECT_REFERENCE),
            Single,
            Nullable,
        ),
        f(4, "sslEnabled", Bool, Single, Omit),
        f(5, "protectionDomain", String, Single, Omit),
        f(6, "storagePool", String, Single, Omit),
        f(7, "storageMode", String, Single, Omit),
        f(8, "volumeName", String, Single, Omit),
        f(9, "fsType", String, Single, Omit),
        f(10, "readOnly", Bool, Single, Omit),
    ],
);

/// `core/v1 StorageOSVolumeSource`.
pub(super) static STORAGE_OS_VOLUME_SOURCE: Message = Message::new(
    "StorageOSVolumeSource",
    &[
        f(1, "volumeName", String, Single, Omit),
        f(2, "volumeNamespace", String, Single, Omit),
        f(3, "fsType", String, Single, Omit),
        f(4, "readOnly", Bool, Single, Omit),
        f(
            5,
            "secretRef",
            Object(&LOCAL_OBJECT_REFERENCE),
            Single,
            Optional,
        ),
    ],
);

/// `core/v1 CSIVolumeSource`.
pub(super) static CSI_VOLUME_SOURCE: Message = Message::new(
    "CSIVolumeSource",
    &[
        f(1, "driver", String, Single, Always),
        f(2, "readOnly", Bool, Single, Optional),
        f(3, "fsType", String, Single, Optional),
        f(4, "volumeAttributes", String, Map, Omit),
        f(
            5,
            "nodePublishSecretRef",
            Object(&LOCAL_OBJECT_REFERENCE),
            Single,
            Optional,
        ),
    ],
);

/// `core/v1 EphemeralVolumeSource`.
pub(super) static EPHEMERAL_VOLUME_SOURCE: Message = Message::new(
    "EphemeralVolumeSource",
    &[f(
        1,
        "volumeClaimTemplate",
        Object(&PERSISTENT_VOLUME_CLAIM_TEMPLATE),
        Single,
        Optional,
    )],
);

/// `core/v1 ImageVolumeSource`.
pub(super) static IMAGE_VOLUME_SOURCE: Message = Message::new(
    "ImageVolumeSource",
    &[
        f(1, "reference", String, Single, Omit),
        f(2, "pullPolicy", String, Single, Omit),
    ],
);

/// `core/v1 ConfigMapEnvSource`.
pub(super) static CONFIG_MAP_ENV_SOURCE: Message = Message::new(
    "ConfigMapEnvSource",
    &[
        f(1, "", Object(&LOCAL_OBJECT_REFERENCE), Single, Inline),
        f(2, "optional", Bool, Single, Optional),
    ],
);

/// `core/v1 SecretEnvSource`.
pub(super) static SECRET_ENV_SOURCE: Message = Message::new(
    "SecretEnvSource",
    &[
        f(1, "", Object(&LOCAL_OBJECT_REFERENCE), Single, Inline),
        f(2, "optional", Bool, Single, Optional),
    ],
);

/// `core/v1 EnvVarSource`.
pub(super) static ENV_VAR_SOURCE: Message = Message::new(
    "EnvVarSource",
    &[
        f(
            1,
            "fieldRef",
            Object(&OBJECT_FIELD_SELECTOR),
            Single,
            Optional,
        ),
        f(
            2,
            "resourceFieldRef",
            Object(&RESOURCE_FIELD_SELECTOR),
            Single,
            Optional,
        ),
        f(
            3,
            "configMapKeyRef",
            Object(&CONFIG_MAP_KEY_SELECTOR),
            Single,
            Optional,
        ),
        f(
            4,
            "secretKeyRef",
            Object(&SECRET_KEY_SELECTOR),
            Single,
            Optional,
        ),
        f(
            5,
            "fileKeyRef",
            Object(&FILE_KEY_SELECTOR),
            Single,
            Optional,
        ),
    ],
);

/// `core/v1 ContainerRestartRuleOnExitCodes`.
pub(super) static CONTAINER_RESTART_RULE_ON_EXIT_CODES: Message = Message::new(
    "ContainerRestartRuleOnExitCodes",
    &[
        f(1, "operator", String, Single, Omit),
        f(2, "values", Int, List, Omit),
    ],
);

/// `core/v1 ProbeHandler`.
pub(super) static PROBE_HANDLER: Message = Message::new(
    "ProbeHandler",
    &[
        f(1, "exec", Object(&EXEC_ACTION), Single, Optional),
        f(2, "httpGet", Object(&HTTP_GET_ACTION), Single, Optional),
        f(3, "tcpSocket", Object(&TCP_SOCKET_ACTION), Single, Optional),
        f(4, "grpc", Object(&GRPC_ACTION), Single, Optional),
    ],
);

/// `core/v1 LifecycleHandler`.
pub(super) static LIFECYCLE_HANDLER: Message = Message::new(
    "LifecycleHandler",
    &[
        f(1, "exec", Object(&EXEC_ACTION), Single, Optional),
        f(2, "httpGet", Object(&HTTP_GET_ACTION), Single, Optional),
        f(3, "tcpSocket", Object(&TCP_SOCKET_ACTION), Single, Optional),
        f(4, "sleep", Object(&SLEEP_ACTION), Single, Optional),
    ],
);

/// `core/v1 Capabilities`.
pub(super) static CAPABILITIES: Message = Message::new(
    "Capabilities",
    &[
        f(1, "add", String, List, Omit),
        f(2, "drop", String, List, Omit),
    ],
);

/// `core/v1 NodeSelector`.
pub(super) static NODE_SELECTOR: Message = Message::new(
    "NodeSelector",
    &[f(
        1,
        "nodeSelectorTerms",
        Object(&NODE_SELECTOR_TERM),
        List,
        Always,
    )],
);

/// `core/v1 PreferredSchedulingTerm`.
pub(super) static PREFERRED_SCHEDULING_TERM: Message = Message::new(
    "PreferredSchedulingTerm",
    &[
        f(1, "weight", Int, Single, Always),
        f(2, "preference", Object(&NODE_SELECTOR_TERM), Single, Always),
    ],
);

/// `core/v1 PodAffinityTerm`.
pub(super) static POD_AFFINITY_TERM: Message = Message::new(
    "PodAffinityTerm",
    &[
        f(
            1,
            "labelSelector",
            Object(&LABEL_SELECTOR),
            Single,
            Optional,
        ),
        f(2, "namespaces", String, List, Omit),
        f(3, "topologyKey", String, Single, Always),
        f(
            4,
            "namespaceSelector",
            Object(&LABEL_SELECTOR),
            Single,
            Optional,
        ),
        f(5, "matchLabelKeys", String, List, Omit),
        f(6, "mismatchLabelKeys", String, List, Omit),
    ],
);

/// `core/v1 WeightedPodAffinityTerm`.
pub(super) static WEIGHTED_POD_AFFINITY_TERM: Message = Message::new(
    "WeightedPodAffinityTerm",
    &[
        f(1, "weight", Int, Single, Always),
        f(
            2,
            "podAffinityTerm",
            Object(&POD_AFFINITY_TERM),
            Single,
            Always,
        ),
    ],
);

/// `core/v1 KeyToPath`.
pub(super) static KEY_TO_PATH: Message = Message::new(
    "KeyToPath",
    &[
        f(1, "key", String, Single, Always),
        f(2, "path", String, Single, Always),
        f(3, "mode", Int, Single, Optional),
        f(4, "user", Int, Single, Optional),
    ],
);

/// `core/v1 DownwardAPIVolumeFile`.
pub(super) static DOWNWARD_API_VOLUME_FILE: Message = Message::new(
    "DownwardAPIVolumeFile",
    &[
        f(1, "path", String, Single, Always),
        f(
            2,
            "fieldRef",
            Object(&OBJECT_FIELD_SELECTOR),
            Single,
            Optional,
        ),
        f(
            3,
            "resourceFieldRef",
            Object(&RESOURCE_FIELD_SELECTOR),
            Single,
            Optional,
        ),
        f(4, "mode", Int, Single, Optional),
        f(5, "user", Int, Single, Optional),
    ],
);

/// `core/v1 VolumeProjection`.
pub(super) static VOLUME_PROJECTION: Message = Message::new(
    "VolumeProjection",
    &[
        f(1, "secret", Object(&SECRET_PROJECTION), Single, Optional),
        f(
            2,
            "downwardAPI",
            Object(&DOWNWARD_API_PROJECTION),
            Single,
            Optional,
        ),
        f(
            3,
            "configMap",
            Object(&CONFIG_MAP_PROJECTION),
            Single,
            Optional,
        ),
        f(
            4,
            "serviceAccountToken",
            Object(&SERVICE_ACCOUNT_TOKEN_PROJECTION),
            Single,
            Optional,
        ),
        f(
            5,
            "clusterTrustBundle",
            Object(&CLUSTER_TRUST_BUNDLE_PROJECTION),
            Single,
            Optional,
        ),
        f(
            6,
            "podCertificate",
            Object(&POD_CERTIFICATE_PROJECTION),
            Single,
            Optional,
        ),
    ],
);

/// `core/v1 PersistentVolumeClaimTemplate`.
pub(super) static PERSISTENT_VOLUME_CLAIM_TEMPLATE: Message = Message::new(
    "PersistentVolumeClaimTemplate",
    &[
        f(1, "metadata", Object(&OBJECT_META), Single, Omit),
        f(
            2,
            "spec",
            Object(&PERSISTENT_VOLUME_CLAIM_SPEC),
            Single,
            Always,
        ),
    ],
);

/// `core/v1 ObjectFieldSelector`.
pub(super) static OBJECT_FIELD_SELECTOR: Message = Message::new(
    "ObjectFieldSelector",
    &[
        f(1, "apiVersion", String, Single, Omit),
        f(2, "fieldPath", String, Single, Always),
    ],
);

/// `core/v1 ResourceFieldSelector`.
pub(super) static RESOURCE_FIELD_SELECTOR: Message = Message::new(
    "ResourceFieldSelector",
    &[
        f(1, "containerName", String, Single, Omit),
        f(2, "resource", String, Single, Always),
        f(3, "divisor", Quantity, Single, Omit),
    ],
);

/// `core/v1 ConfigMapKeySelector`.
pub(super) static CONFIG_MAP_KEY_SELECTOR: Message = Message::new(
    "ConfigMapKeySelector",
    &[
        f(1, "", Object(&LOCAL_OBJECT_REFERENCE), Single, Inline),
        f(2, "key", String, Single, Always),
        f(3, "optional", Bool, Single, Optional),
    ],
);

/// `core/v1 SecretKeySelector`.
pub(super) static SECRET_KEY_SELECTOR: Message = Message::new(
    "SecretKeySelector",
    &[
        f(1, "", Object(&LOCAL_OBJECT_REFERENCE), Single, Inline),
        f(2, "key", String, Single, Always),
        f(3, "optional", Bool, Single, Optional),
    ],
);

/// `core/v1 FileKeySelector`.
pub(super) static FILE_KEY_SELECTOR: Message = Message::new(
    "FileKeySelector",
    &[
        f(1, "volumeName", String, Single, Always),
        f(2, "path", String, Single, Always),
        f(3, "key", String, Single, Always),
        f(4, "optional", Bool, Single, Optional),
    ],
);

/// `core/v1 ExecAction`.
pub(super) static EXEC_ACTION: Message =
    Message::new("ExecAction", &[f(1, "command", String, List, Omit)]);

/// `core/v1 HTTPGetAction`.
pub(super) static HTTP_GET_ACTION: Message = Message::new(
    "HTTPGetAction",
    &[
        f(1, "path", String, Single, Omit),
        f(2, "port", IntOrString, Single, Always),
        f(3, "host", String, Single, Omit),
        f(4, "scheme", String, Single, Omit),
        f(5, "httpHeaders", Object(&HTTP_HEADER), List, Omit),
        f(6, "protocol", String, Single, Optional),
    ],
);

/// `core/v1 TCPSocketAction`.
pub(super) static TCP_SOCKET_ACTION: Message = Message::new(
    "TCPSocketAction",
    &[
        f(1, "port", IntOrString, Single, Always),
        f(2, "host", String, Single, Omit),
    ],
);

/// `core/v1 GRPCAction`.
pub(super) static GRPC_ACTION: Message = Message::new(
    "GRPCAction",
    &[
        f(1, "port", Int, Single, Always),
        f(2, "service", String, Single, Nullable),
        f(3, "mode", String, Single, Optional),
    ],
);

/// `core/v1 SleepAction`.
pub(super) static SLEEP_ACTION: Message =
    Message::new("SleepAction", &[f(1, "seconds", Int, Single, Always)]);

/// `core/v1 NodeSelectorTerm`.
pub(super) static NODE_SELECTOR_TERM: Message = Message::new(
    "NodeSelectorTerm",
    &[
        f(
            1,
            "matchExpressions",
            Object(&NODE_SELECTOR_REQUIREMENT),
            List,
            Omit,
        ),
        f(
            2,
            "matchFields",
            Object(&NODE_SELECTOR_REQUIREMENT),
            List,
            Omit,
        ),
    ],
);

/// `core/v1 SecretProjection`.
pub(super) static SECRET_PROJECTION: Message = Message::new(
    "SecretProjection",
    &[
        f(1, "", Object(&LOCAL_OBJECT_REFERENCE), Single, Inline),
        f(2, "items", Object(&KEY_TO_PATH), List, Omit),
        f(4, "optional", Bool, Single, Optional),
    ],
);

/// `core/v1 DownwardAPIProjection`.
pub(super) static DOWNWARD_API_PROJECTION: Message = Message::new(
    "DownwardAPIProjection",
    &[f(1, "items", Object(&DOWNWARD_API_VOLUME_FILE), List, Omit)],
);

/// `core/v1 ConfigMapProjection`.
pub(super) static CONFIG_MAP_PROJECTION: Message = Message::new(
    "ConfigMapProjection",
    &[
        f(1, "", Object(&LOCAL_OBJECT_REFERENCE), Single, Inline),
        f(2, "items", Object(&KEY_TO_PATH), List, Omit),
        f(4, "optional", Bool, Single, Optional),
    ],
);

/// `core/v1 ServiceAccountTokenProjection`.
pub(super) static SERVICE_ACCOUNT_TOKEN_PROJECTION: Message = Message::new(
    "ServiceAccountTokenProjection",
    &[
        f(1, "audience", String, Single, Omit),
        f(2, "expirationSeconds", Int, Single, Optional),
        f(3, "path", String, Single, Always),
        f(4, "user", Int, Single, Optional),
    ],
);

/// `core/v1 ClusterTrustBundleProjection`.
pub(super) static CLUSTER_TRUST_BUNDLE_PROJECTION: Message = Message::new(
    "ClusterTrustBundleProjection",
    &[
        f(1, "name", String, Single, Optional),
        f(2, "signerName", String, Single, Optional),
        f(
            3,
            "labelSelector",
            Object(&LABEL_SELECTOR),
            Single,
            Optional,
        ),
        f(5, "optional", Bool, Single, Optional),
        f(4, "path", String, Single, Always),
        f(6, "user", Int, Single, Optional),
    ],
);

/// `core/v1 PodCertificateProjection`.
pub(super) static POD_CERTIFICATE_PROJECTION: Message = Message::new(
    "PodCertificateProjection",
    &[
        f(1, "signerName", String, Single, Omit),
        f(2, "keyType", String, Single, Omit),
        f(3, "maxExpirationSeconds", Int, Single, Optional),
        f(4, "credentialBundlePath", String, Single, Omit),
        f(5, "keyPath", String, Single, Omit),
        f(6, "certificateChainPath", String, Single, Omit),
        f(7, "userAnnotations", String, Map, Omit),
        f(8, "user", Int, Single, Optional),
    ],
);

/// `core/v1 PersistentVolumeClaimSpec`.
pub(super) static PERSISTENT_VOLUME_CLAIM_SPEC: Message = Message::new(
    "PersistentVolumeClaimSpec",
    &[
        f(1, "accessModes", String, List, Omit),
        f(4, "selector", Object(&LABEL_SELECTOR), Single, Optional),
        f(
            2,
            "resources",
            Object(&VOLUME_RESOURCE_REQUIREMENTS),
            Single,
            Omit,
        ),
        f(3, "volumeName", String, Single, Omit),
        f(5, "storageClassName", String, Single, Optional),
        f(6, "volumeMode", String, Single, Optional),
        f(
            7,
            "dataSource",
            Object(&TYPED_LOCAL_OBJECT_REFERENCE),
            Single,
            Optional,
        ),
        f(
            8,
            "dataSourceRef",
            Object(&TYPED_OBJECT_REFERENCE),
            Single,
            Optional,
        ),
        f(9, "volumeAttributesClassName", String, Single, Optional),
    ],
);

/// `core/v1 HTTPHeader`.
pub(super) static HTTP_HEADER: Message = Message::new(
    "HTTPHeader",
    &[
        f(1, "name", String, Single, Always),
        f(2, "value", String, Single, Always),
    ],
);

/// `core/v1 NodeSelectorRequirement`.
pub(super) static NODE_SELECTOR_REQUIREMENT: Message = Message::new(
    "NodeSelectorRequirement",
    &[
        f(1, "key", String, Single, Always),
        f(2, "operator", String, Single, Always),
        f(3, "values", String, List, Omit),
    ],
);

/// `core/v1 VolumeResourceRequirements`.
pub(super) static VOLUME_RESOURCE_REQUIREMENTS: Message = Message::new(
    "VolumeResourceRequirements",
    &[
        f(1, "limits", Quantity, Map, Omit),
        f(2, "requests", Quantity, Map, Omit),
    ],
);

/// `core/v1 TypedObjectReference`.
pub(super) static TYPED_OBJECT_REFERENCE: Message = Message::new(
    "TypedObjectReference",
    &[
        f(1, "apiGroup", String, Single, Nullable),
        f(2, "kind", String, Single, Always),
        f(3, "name", String, Single, Always),
        f(4, "namespace", String, Single, Optional),
    ],
);
