//! Printers of `batch`: Jobs and CronJobs.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::super::age;
use super::super::labels::format_label_selector;
use super::{
    age_cell, age_col, bool_or, col, condition, containers, deleting, go_bool, int_at, len, name,
    name_cell, template_columns, wide,
};
use crate::table::Column;

const JOB_SELECTOR_DOC: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

pub(super) fn job_columns() -> Vec<Column> {
    let [containers, images] = template_columns();
    vec![
        name(),
        col("Status", "string", "Status of the job."),
        col(
            "Completions",
            "string",
            "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
        ),
        col("Duration", "string", "Time required to complete the job."),
        age_col(),
        containers,
        images,
        wide("Selector", "string", JOB_SELECTOR_DOC),
    ]
}

/// A Job: its state from its conditions, succeeded pods of those it needs, and how long it ran
/// (or has been running).
pub(super) fn job(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let status = &o["status"];
    let succeeded = int_at(&status["succeeded"]);
    // kube-apiserver defaults completions and parallelism to 1 when both are unset.
    let completions = match (&spec["completions"], &spec["parallelism"]) {
        (Value::Null, Value::Null) => Some(1),
        (Value::Null, _) => None,
        (completions, _) => Some(int_at(completions)),
    };
    let completions = match completions {
        Some(completions) => format!("{succeeded}/{completions}"),
        None => match int_at(&spec["parallelism"]) {
            parallelism if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = age::parse(status["startTime"].as_str());
    let completion = age::parse(status["completionTime"].as_str());
    let duration = match (start, completion) {
        (None, _) => String::new(),
        (Some(start), None) => age::human_duration(now.duration_since(start)),
        (Some(start), Some(end)) => age::human_duration(end.duration_since(start)),
    };
    let has =
        |ty: &str| condition(&status["conditions"], ty).is_some_and(|c| c["status"] == "True");
    let state = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if deleting(o) {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = containers(&spec["template"]);
    vec![
        name_cell(o),
        json!(state),
        json!(completions),
        json!(duration),
        age_cell(o, now),
        json!(names),
        json!(images),
        json!(format_label_selector(&spec["selector"])),
    ]
}

pub(super) fn cron_job_columns() -> Vec<Column> {
    let [containers, images] = template_columns();
    vec![
        name(),
        col(
            "Schedule",
            "string",
            "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
        ),
        col(
            "Timezone",
            "string",
            "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
        ),
        col(
            "Suspend",
            "boolean",
            "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.",
        ),
        col(
            "Active",
            "integer",
            "A list of pointers to currently running jobs.",
        ),
        col(
            "Last Schedule",
            "string",
            "Information when was the last time the job was successfully scheduled.",
        ),
        age_col(),
        containers,
        images,
        wide("Selector", "string", JOB_SELECTOR_DOC),
    ]
}

/// A CronJob. Suspend prints as the text `True` or `False` although its column is boolean, as
/// upstream's does.
pub(super) fn cron_job(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let last_schedule = match &o["status"]["lastScheduleTime"] {
        Value::Null => "<none>".to_owned(),
        at => age::since(at.as_str(), now),
    };
    let job_spec = &spec["jobTemplate"]["spec"];
    let (names, images) = containers(&job_spec["template"]);
    vec![
        name_cell(o),
        json!(spec["schedule"].as_str().unwrap_or_default()),
        json!(spec["timeZone"].as_str().unwrap_or("<none>")),
        json!(go_bool(bool_or(&spec["suspend"], false))),
        json!(len(&o["status"]["active"])),
        json!(last_schedule),
        age_cell(o, now),
        json!(names),
        json!(images),
        json!(format_label_selector(&job_spec["selector"])),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::{Value, json};

    fn job(spec: Value, status: Value) -> Value {
        let mut spec = spec;
        spec["template"] = json!({"spec": {"containers": [{"name": "pi", "image": "perl:5.34"}]}});
        spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}});
        json!({"metadata": meta("pi"), "spec": spec, "status": status})
    }

    #[test]
    fn job_status_completions_and_duration() {
        assert_eq!(
            headers(Printer::Job),
            [
                "NAME",
                "STATUS",
                "COMPLETIONS",
                "DURATION",
                "AGE",
                "CONTAINERS*",
                "IMAGES*",
                "SELECTOR*"
            ]
        );
        let done = job(
            json!({"completions": 1, "parallelism": 1}),
            json!({"succeeded": 1, "startTime": "2025-03-01T11:55:02Z",
                "completionTime": "2025-03-01T11:55:40Z",
                "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                    {"type": "Complete", "status": "True"}]}),
        );
        assert_eq!(
            cells(Printer::Job, done),
            [
                json!("pi"),
                json!("Complete"),
                json!("1/1"),
                json!("38s"),
                json!("5m"),
                json!("pi"),
                json!("perl:5.34"),
                json!("batch.kubernetes.io/controller-uid=u-1")
            ]
        );
        let running = job(
            json!({"completions": 5, "parallelism": 2}),
            json!({"succeeded": 2, "startTime": "2025-03-01T11:56:30Z"}),
        );
        assert_eq!(
            cells(Printer::Job, running)[1..4],
            [json!("Running"), json!("2/5"), json!("3m30s")]
        );
        let work_queue = job(json!({"parallelism": 3}), json!({}));
        assert_eq!(
            cells(Printer::Job, work_queue)[1..4],
            [json!("Running"), json!("0/1 of 3"), json!("")]
        );
        // Neither set: kube-apiserver defaults both to 1.
        let defaulted = job(json!({}), json!({}));
        assert_eq!(cells(Printer::Job, defaulted)[2], json!("0/1"));
        let failed = job(
            json!({"completions": 1}),
            json!({"failed": 6, "conditions": [{"type": "FailureTarget", "status": "True"},
                {"type": "Failed", "status": "True"}]}),
        );
        assert_eq!(cells(Printer::Job, failed)[1], json!("Failed"));
        let failing = job(
            json!({"completions": 1}),
            json!({"conditions": [{"type": "FailureTarget", "status": "True"}]}),
        );
        assert_eq!(cells(Printer::Job, failing)[1], json!("FailureTarget"));
        let suspended = job(
            json!({"completions": 1, "suspend": true}),
            json!({"conditions": [{"type": "Suspended", "status": "True"}]}),
        );
        assert_eq!(
            cells(Printer::Job, suspended.clone())[1],
            json!("Suspended")
        );
        let mut terminating = suspended;
        terminating["metadata"]["deletionTimestamp"] = json!("2025-03-01T11:59:00Z");
        assert_eq!(cells(Printer::Job, terminating)[1], json!("Terminating"));
        let resumed = job(
            json!({"completions": 1}),
            json!({"conditions": [{"type": "Suspended", "status": "False"}]}),
        );
        assert_eq!(cells(Printer::Job, resumed)[1], json!("Running"));
    }

    #[test]
    fn cron_job_schedule_suspend_active_and_last_schedule() {
        assert_eq!(
            headers(Printer::CronJob),
            [
                "NAME",
                "SCHEDULE",
                "TIMEZONE",
                "SUSPEND",
                "ACTIVE",
                "LAST SCHEDULE",
                "AGE",
                "CONTAINERS*",
                "IMAGES*",
                "SELECTOR*"
            ]
        );
        let columns = Printer::CronJob.columns();
        assert_eq!(columns[3].ty, "boolean");
        assert_eq!(columns[4].ty, "integer");
        let cron = json!({"metadata": meta("report"), "spec": {"schedule": "*/5 * * * *",
                "timeZone": "Etc/UTC", "suspend": false,
                "jobTemplate": {"spec": {"template": {"spec": {"containers": [
                    {"name": "report", "image": "busybox:1.37"}]}}}}},
            "status": {"active": [{"kind": "Job", "name": "report-29012345"}],
                "lastScheduleTime": "2025-03-01T11:58:00Z"}});
        assert_eq!(
            cells(Printer::CronJob, cron),
            [
                json!("report"),
                json!("*/5 * * * *"),
                json!("Etc/UTC"),
                json!("False"),
                json!(1),
                json!("2m"),
                json!("5m"),
                json!("report"),
                json!("busybox:1.37"),
                json!("<none>")
            ]
        );
        let paused = json!({"metadata": meta("paused"),
            "spec": {"schedule": "@hourly", "suspend": true}});
        assert_eq!(
            cells(Printer::CronJob, paused)[1..6],
            [
                json!("@hourly"),
                json!("<none>"),
                json!("True"),
                json!(0),
                json!("<none>")
            ]
        );
        let defaulted = json!({"metadata": meta("d"), "spec": {"schedule": "0 0 * * *"}});
        assert_eq!(cells(Printer::CronJob, defaulted)[3], json!("False"));
    }
}
