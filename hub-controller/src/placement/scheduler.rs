//! Which of the clusters a WorkPlacement's selector picks receive its Work: the placement's
//! policy (`PickAll`, `PickFixed`, `PickN`) applied to the candidates' labels, properties and
//! health, and to the clusters chosen before.
//!
//! Pure: no I/O, no clock; the controller calls [`schedule`] once per reconcile.
//!
//! - Required affinity (terms ORed, a term's criteria ANDed) is re-evaluated every time: a
//!   cluster that stops matching loses the Work, one that starts matching may gain it.
//! - Preferences score the candidates: a term scores its weight where it matches; a sort scores
//!   from 0 to its weight, linear between the lowest and highest value among the clusters that
//!   match the affinity (as KubeFleet's property sorter does). A cluster whose value is missing
//!   or not a number scores 0 for that sort, ranks below the others of its score, and its
//!   decision says why.
//! - `PickN` is stable: the clusters chosen before are kept while they match the affinity (a
//!   cluster that became cheaper elsewhere does not move the Work), missing slots are filled by
//!   score then name, and with too many kept the lowest scores go first. Only ready clusters are
//!   chosen anew.
//! - Failover (`PickN` with `failover`): a chosen cluster not ready for `afterSeconds` is replaced
//!   by the best ready one, and kept when none can replace it; with `purgeOnReturn: false` its
//!   Work stays there (retained), otherwise it goes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use atoll_api::placement::policy::parse_quantity;
use atoll_api::placement::{
    AffinityTerm, ClusterDecision, DECISIONS_MAX, Policy, PolicyType, PropertyExpression, SortOrder,
};

use super::matches;

/// What the scheduler sees of a cluster the selector picks.
#[derive(Debug, Clone, Default)]
pub struct Candidate {
    /// Its name.
    pub name: String,
    /// Its ClusterProfile's labels.
    pub labels: BTreeMap<String, String>,
    /// Its ClusterProfile's properties, by name.
    pub properties: BTreeMap<String, String>,
    /// How long its control plane has not been ready (`None`: it is ready).
    pub unready_for: Option<Duration>,
}

/// What a placement decided before.
#[derive(Debug, Clone, Default)]
pub struct Previous {
    /// The clusters chosen.
    pub chosen: BTreeSet<String>,
    /// The clusters failed over from whose Work stays there.
    pub retained: BTreeSet<String>,
    /// The clusters failed over from (their decisions said [`REPLACED`]).
    pub replaced: BTreeSet<String>,
}

/// How a decision ends for a cluster failed over from.
pub const REPLACED: &str = ": replaced";

/// Whether the policy found the clusters it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `True` or `False`.
    pub status: &'static str,
    /// `Scheduled` or `NotEnoughClusters`.
    pub reason: &'static str,
    /// For people, e.g. `found 2 of 3 clusters`.
    pub message: String,
}

/// How many of the clusters a `PickAll` or `PickN` policy neither chose, retained nor replaced
/// get a decision in the status: why a few were left out is worth reading, a line for each of
/// thousands is not (the `Scheduled` condition counts them all). `PickFixed` decides on the
/// clusters it names alone.
pub const UNCHOSEN_DECISIONS_MAX: usize = 20;

/// What the policy decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// The clusters that receive the Work, by name.
    pub chosen: Vec<String>,
    /// The clusters not chosen whose Work stays (failed over from with `purgeOnReturn: false`),
    /// by name.
    pub retained: Vec<String>,
    /// One per chosen, retained or replaced candidate and per name of `PickFixed`, and at most
    /// [`UNCHOSEN_DECISIONS_MAX`] of the other candidates; the chosen first, each by name; at
    /// most [`DECISIONS_MAX`] in all.
    pub decisions: Vec<ClusterDecision>,
    /// The `Scheduled` condition.
    pub verdict: Verdict,
    /// When the schedule changes with time alone: a chosen cluster that is not ready reaches the
    /// failover delay.
    pub wake: Option<Duration>,
}

/// A candidate's standing: whether it matches the affinity (and if not, why), its score, and
/// the notes on the values its score could not use.
struct Standing<'a> {
    candidate: &'a Candidate,
    unmatched: Option<String>,
    score: i32,
    notes: Vec<String>,
}

impl Standing<'_> {
    /// The order of preference: highest score, then no unusable values, then name.
    fn rank(&self) -> (std::cmp::Reverse<i32>, usize, &str) {
        (
            std::cmp::Reverse(self.score),
            self.notes.len(),
            self.candidate.name.as_str(),
        )
    }
}

/// Applies `policy` to `candidates` (the clusters the selector picks), keeping under `PickN` the
/// clusters of `previous` (chosen before) that still match. The policy is assumed valid
/// (`atoll_api::placement::policy::validate`); an expression that is not matches nothing.
pub fn schedule(policy: &Policy, candidates: &[Candidate], previous: &Previous) -> Schedule {
    // `PickFixed` decides on the clusters it names alone, as KubeFleet's does: the controller
    // then looks those up instead of reading the whole fleet for each such placement.
    let fixed: Option<BTreeSet<&str>> = (policy.type_ == PolicyType::PickFixed)
        .then(|| policy.cluster_names.iter().map(String::as_str).collect());
    let mut standings: Vec<Standing<'_>> = candidates
        .iter()
        .filter(|c| fixed.as_ref().is_none_or(|f| f.contains(c.name.as_str())))
        .map(|candidate| Standing {
            candidate,
            unmatched: unmatched(&policy.affinity, candidate),
            score: 0,
            notes: Vec::new(),
        })
        .collect();
    score(policy, &mut standings);
    standings.sort_by(|a, b| a.rank().cmp(&b.rank()));

    let mut decisions = Decisions::default();
    let (matching, unmatching): (Vec<&Standing<'_>>, Vec<&Standing<'_>>) =
        standings.iter().partition(|s| s.unmatched.is_none());
    for standing in &unmatching {
        let why = standing.unmatched.clone().unwrap_or_default();
        decisions.decide(standing, false, why);
    }
    let field = Field {
        matching: &matching,
        unmatching: &unmatching,
    };
    let Picked {
        mut chosen,
        verdict,
        extra,
        mut retained,
        wake,
    } = match policy.type_ {
        PolicyType::PickAll => pick_all(&field, &mut decisions),
        PolicyType::PickFixed => pick_fixed(policy, candidates, &field, &mut decisions),
        PolicyType::PickN => PickN::new(policy, previous).pick(&field, &mut decisions),
    };
    chosen.sort();
    // Retained before and still not chosen (nor gone from the inventory): still retained.
    let known: BTreeSet<&str> = candidates.iter().map(|c| c.name.as_str()).collect();
    for name in &previous.retained {
        if known.contains(name.as_str()) && chosen.binary_search(name).is_err() {
            retained.insert(name.clone());
        }
    }
    for name in &retained {
        if let Some(decision) = decisions.0.get_mut(name) {
            decision.retained = true;
            decision
                .reason
                .push_str("; its Work stays (failover.purgeOnReturn is false)");
        }
    }
    let decisions = listed(decisions.0.into_values().chain(extra).collect(), policy);
    Schedule {
        chosen,
        retained: retained.into_iter().collect(),
        decisions,
        verdict,
        wake,
    }
}

/// The candidates in order of preference, apart by whether they match the required affinity.
struct Field<'s, 'a> {
    matching: &'s [&'s Standing<'a>],
    unmatching: &'s [&'s Standing<'a>],
}

/// The decision on each candidate, by name.
#[derive(Default)]
struct Decisions(BTreeMap<String, ClusterDecision>);

impl Decisions {
    /// Records whether `standing` is selected and why, with the notes on its score.
    fn decide(&mut self, standing: &Standing<'_>, selected: bool, mut reason: String) {
        for note in &standing.notes {
            reason.push_str("; ");
            reason.push_str(note);
        }
        self.0.insert(
            standing.candidate.name.clone(),
            ClusterDecision {
                cluster_name: standing.candidate.name.clone(),
                selected,
                score: standing.score,
                reason,
                retained: false,
            },
        );
    }
}

/// What one policy type chose.
struct Picked {
    chosen: Vec<String>,
    verdict: Verdict,
    /// Decisions on names that are no candidate (`PickFixed`).
    extra: Vec<ClusterDecision>,
    /// Clusters failed over from whose Work stays.
    retained: BTreeSet<String>,
    wake: Option<Duration>,
}

/// `PickAll`: every matching candidate.
fn pick_all(field: &Field<'_, '_>, decisions: &mut Decisions) -> Picked {
    for standing in field.matching {
        decisions.decide(standing, true, "matches".into());
    }
    let verdict = Verdict {
        status: "True",
        reason: "Scheduled",
        message: format!(
            "picked all {} matching clusters{}",
            field.matching.len(),
            left_out(field.unmatching)
        ),
    };
    Picked {
        chosen: field
            .matching
            .iter()
            .map(|s| s.candidate.name.clone())
            .collect(),
        verdict,
        extra: Vec::new(),
        retained: BTreeSet::new(),
        wake: None,
    }
}

/// `PickFixed`: the matching candidates, all of which `clusterNames` names; a name that is no
/// candidate gets a decision saying so.
fn pick_fixed(
    policy: &Policy,
    candidates: &[Candidate],
    field: &Field<'_, '_>,
    decisions: &mut Decisions,
) -> Picked {
    let named: BTreeSet<&str> = policy.cluster_names.iter().map(String::as_str).collect();
    let mut chosen = Vec::new();
    for standing in field.matching {
        decisions.decide(standing, true, "named in clusterNames".into());
        chosen.push(standing.candidate.name.clone());
    }
    let known: BTreeSet<&str> = candidates.iter().map(|c| c.name.as_str()).collect();
    let extra: Vec<ClusterDecision> = named
        .iter()
        .filter(|n| !known.contains(**n))
        .map(|name| ClusterDecision {
            cluster_name: (*name).to_owned(),
            selected: false,
            score: 0,
            reason: "not a member cluster the selector picks".into(),
            retained: false,
        })
        .collect();
    let verdict = enough(chosen.len(), named.len(), field.unmatching, &extra);
    Picked {
        chosen,
        verdict,
        extra,
        retained: BTreeSet::new(),
        wake: None,
    }
}

/// `PickN`: stable choices, filled by preference (and topology spread), with failover.
struct PickN<'p> {
    policy: &'p Policy,
    previous: &'p Previous,
    n: usize,
    /// `failover.afterSeconds`.
    after: Option<Duration>,
    spread: Option<&'p str>,
}

impl<'p> PickN<'p> {
    fn new(policy: &'p Policy, previous: &'p Previous) -> Self {
        PickN {
            policy,
            previous,
            n: usize::try_from(policy.number_of_clusters.unwrap_or(0)).unwrap_or(0),
            after: policy.failover.as_ref().map(|f| f.after()),
            spread: policy
                .topology_spread
                .as_ref()
                .map(|t| t.topology_key.as_str()),
        }
    }

    fn was_chosen(&self, s: &Standing<'_>) -> bool {
        self.previous.chosen.contains(&s.candidate.name)
    }

    /// Chosen before and not ready past the failover delay: replaced when a ready cluster can
    /// take its place.
    fn failed(&self, s: &Standing<'_>) -> bool {
        self.was_chosen(s)
            && self
                .after
                .is_some_and(|after| s.candidate.unready_for.is_some_and(|d| d >= after))
    }

    fn unready(&self, s: &Standing<'_>) -> String {
        let seconds = s.candidate.unready_for.unwrap_or_default().as_secs();
        let after = self.after.unwrap_or_default().as_secs();
        format!("not ready for {seconds}s, past failover.afterSeconds {after}")
    }

    fn pick(&self, field: &Field<'_, '_>, decisions: &mut Decisions) -> Picked {
        let picked = self.select(field.matching);
        let picked_names: BTreeSet<&str> =
            picked.iter().map(|s| s.candidate.name.as_str()).collect();
        let retained = self.explain(field.matching, &picked, &picked_names, decisions);
        let not_ready = field
            .matching
            .iter()
            .filter(|s| {
                !picked_names.contains(s.candidate.name.as_str())
                    && s.candidate.unready_for.is_some()
            })
            .count();
        let mut verdict = enough(picked.len(), self.n, field.unmatching, &[]);
        if picked.len() < self.n && not_ready > 0 {
            verdict
                .message
                .push_str(&format!(", {not_ready} not ready"));
        }
        // When a chosen cluster that is not ready yet reaches the failover delay.
        let wake = self.after.and_then(|after| {
            picked
                .iter()
                .filter_map(|s| s.candidate.unready_for)
                .filter(|d| *d < after)
                .map(|d| after - d)
                .min()
        });
        Picked {
            chosen: picked.iter().map(|s| s.candidate.name.clone()).collect(),
            verdict,
            extra: Vec::new(),
            retained,
            wake,
        }
    }

    /// Kept first, in order of preference, then the best of the ready others, then the failed
    /// ones no ready cluster can replace.
    fn select<'s, 'a>(&self, matching: &[&'s Standing<'a>]) -> Vec<&'s Standing<'a>> {
        let kept = matching
            .iter()
            .copied()
            .filter(|s| self.was_chosen(s) && !self.failed(s));
        let stuck: Vec<&Standing<'_>> = matching
            .iter()
            .copied()
            .filter(|s| self.failed(s))
            .collect();
        let fresh: Vec<&Standing<'_>> = matching
            .iter()
            .copied()
            .filter(|s| !self.was_chosen(s) && s.candidate.unready_for.is_none())
            .collect();
        let mut picked: Vec<&Standing<'_>> = kept.take(self.n).collect();
        let wanted = self.n.saturating_sub(picked.len());
        picked.extend(fill(&picked, &fresh, wanted, self.spread));
        let wanted = self.n.saturating_sub(picked.len());
        picked.extend(stuck.iter().copied().take(wanted));
        picked
    }

    /// Decides on every matching candidate, saying why it was picked or not; returns the
    /// clusters failed over from whose Work stays.
    fn explain(
        &self,
        matching: &[&Standing<'_>],
        picked: &[&Standing<'_>],
        picked_names: &BTreeSet<&str>,
        decisions: &mut Decisions,
    ) -> BTreeSet<String> {
        let n = self.n;
        let spread_taken: BTreeSet<&String> = self
            .spread
            .map(|key| {
                picked
                    .iter()
                    .filter_map(|s| s.candidate.labels.get(key))
                    .collect()
            })
            .unwrap_or_default();
        let worst = picked
            .iter()
            .filter(|s| !self.failed(s))
            .map(|s| s.rank())
            .max();
        let below_worst = |s: &Standing<'_>| worst.as_ref().is_some_and(|w| s.rank() < *w);
        let mut retained = BTreeSet::new();
        for standing in matching {
            let name = standing.candidate.name.as_str();
            if picked_names.contains(name) {
                let why = if self.failed(standing) {
                    format!(
                        "chosen before; {}, but no ready cluster can replace it",
                        self.unready(standing)
                    )
                } else if self.was_chosen(standing) {
                    "chosen before and still matches".to_owned()
                } else {
                    format!("in the top {n}")
                };
                decisions.decide(standing, true, why);
            } else if self.failed(standing) {
                let why = format!("{}{REPLACED}", self.unready(standing));
                decisions.decide(standing, false, why);
                if self
                    .policy
                    .failover
                    .as_ref()
                    .is_some_and(|f| !f.purge_on_return())
                {
                    retained.insert(name.to_owned());
                }
            } else if self.previous.replaced.contains(name)
                && standing.candidate.unready_for.is_some()
            {
                // Failed over from and still not ready: it stays replaced, as said.
                let why = format!("{}{REPLACED}", self.unready(standing));
                decisions.decide(standing, false, why);
            } else if !self.was_chosen(standing) && standing.candidate.unready_for.is_some() {
                let why = "not ready: only ready clusters are chosen anew".into();
                decisions.decide(standing, false, why);
            } else if let Some((key, value)) = self.spread.and_then(|key| {
                let value = standing.candidate.labels.get(key)?;
                spread_taken.contains(value).then_some((key, value))
            }) && below_worst(standing)
            {
                let why = format!("{key}={value} already has a chosen cluster (topologySpread)");
                decisions.decide(standing, false, why);
            } else if below_worst(standing) {
                let why =
                    format!("the {n} clusters chosen before still match (decisions are stable)");
                decisions.decide(standing, false, why);
            } else {
                decisions.decide(standing, false, format!("not in the top {n}"));
            }
        }
        retained
    }
}

/// The decisions a status lists, in order: the chosen first, then the retained (what the next
/// schedule reads back); every chosen, retained or replaced cluster and every decision of
/// `PickFixed` (each on a cluster it names); of the others, the first [`UNCHOSEN_DECISIONS_MAX`] by name; at most [`DECISIONS_MAX`].
fn listed(mut decisions: Vec<ClusterDecision>, policy: &Policy) -> Vec<ClusterDecision> {
    decisions.sort_by(|a, b| {
        (!a.selected, !a.retained, &a.cluster_name).cmp(&(
            !b.selected,
            !b.retained,
            &b.cluster_name,
        ))
    });
    let mut unchosen = 0;
    decisions.retain(|d| {
        let kept = d.selected
            || d.retained
            || d.reason.contains(REPLACED)
            || policy.type_ == PolicyType::PickFixed;
        if !kept {
            unchosen += 1;
        }
        kept || unchosen <= UNCHOSEN_DECISIONS_MAX
    });
    decisions.truncate(DECISIONS_MAX);
    decisions
}

/// The best `wanted` of `fresh` (in order of preference) to add to `picked`; with a spread key,
/// one per value of that label before a second (counting those picked), clusters without the
/// label last.
fn fill<'a, 'b>(
    picked: &[&'b Standing<'a>],
    fresh: &[&'b Standing<'a>],
    wanted: usize,
    spread: Option<&str>,
) -> Vec<&'b Standing<'a>> {
    let Some(key) = spread else {
        return fresh.iter().copied().take(wanted).collect();
    };
    let domain = |s: &Standing<'_>| s.candidate.labels.get(key).cloned();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for standing in picked {
        if let Some(d) = domain(standing) {
            *counts.entry(d).or_default() += 1;
        }
    }
    // Each domain's clusters in order of preference; those without the label apart.
    let mut queues: BTreeMap<String, std::collections::VecDeque<&'b Standing<'a>>> =
        BTreeMap::new();
    let mut unlabelled = Vec::new();
    for standing in fresh {
        match domain(standing) {
            Some(d) => queues.entry(d).or_default().push_back(standing),
            None => unlabelled.push(*standing),
        }
    }
    let mut out = Vec::new();
    while out.len() < wanted {
        // The least-filled domain, the better head first.
        let next = queues
            .iter()
            .filter_map(|(d, q)| Some((counts.get(d).copied().unwrap_or(0), q.front()?.rank(), d)))
            .min()
            .map(|(_, _, d)| d.clone());
        let Some(d) = next else { break };
        if let Some(standing) = queues.get_mut(&d).and_then(|q| q.pop_front()) {
            *counts.entry(d).or_default() += 1;
            out.push(standing);
        }
    }
    let left = wanted.saturating_sub(out.len());
    out.extend(unlabelled.into_iter().take(left));
    out
}

/// `found X of N clusters`, true when X reaches N.
fn enough(
    found: usize,
    wanted: usize,
    unmatching: &[&Standing<'_>],
    missing: &[ClusterDecision],
) -> Verdict {
    if found >= wanted {
        return Verdict {
            status: "True",
            reason: "Scheduled",
            message: format!(
                "picked {found} of {wanted} clusters{}",
                left_out(unmatching)
            ),
        };
    }
    let mut message = format!("found {found} of {wanted} clusters");
    let mut why = Vec::new();
    if !unmatching.is_empty() {
        why.push(format!(
            "{} did not match required affinity",
            unmatching.len()
        ));
    }
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|d| d.cluster_name.as_str()).collect();
        why.push(format!(
            "not member clusters the selector picks: {}",
            names.join(", ")
        ));
    }
    if !why.is_empty() {
        message.push_str(": ");
        message.push_str(&why.join(", "));
    }
    Verdict {
        status: "False",
        reason: "NotEnoughClusters",
        message,
    }
}

fn left_out(unmatching: &[&Standing<'_>]) -> String {
    if unmatching.is_empty() {
        String::new()
    } else {
        format!("; {} did not match required affinity", unmatching.len())
    }
}

/// Why a candidate matches no term of the required affinity (`None`: it matches one, or there
/// are none).
fn unmatched(affinity: &[AffinityTerm], candidate: &Candidate) -> Option<String> {
    let mut first = None;
    for term in affinity {
        match term_mismatch(term.label_selector.as_ref(), &term.properties, candidate) {
            None => return None,
            Some(why) => {
                first.get_or_insert(why);
            }
        }
    }
    let why = first?;
    Some(if affinity.len() == 1 {
        format!("did not match required affinity: {why}")
    } else {
        format!("did not match required affinity: no term matches (the first: {why})")
    })
}

/// Why a candidate does not match a term (`None`: it does).
fn term_mismatch(
    labels: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    properties: &[PropertyExpression],
    candidate: &Candidate,
) -> Option<String> {
    if let Some(selector) = labels
        && !matches(selector, &candidate.labels)
    {
        return Some("labels do not match".into());
    }
    properties
        .iter()
        .find_map(|expression| expression_mismatch(expression, &candidate.properties))
}

/// Why a cluster's properties do not satisfy an expression (`None`: they do).
fn expression_mismatch(
    expression: &PropertyExpression,
    properties: &BTreeMap<String, String>,
) -> Option<String> {
    let name = &expression.property;
    let value = properties.get(name);
    let op = expression.operator.as_str();
    let shown = || format!("{name} {op} {}", expression.values.join(","));
    match (op, value) {
        ("Exists", Some(_)) | ("DoesNotExist", None) => None,
        ("Exists", None) => Some(format!("has no property {name:?}")),
        ("DoesNotExist", Some(_)) => Some(format!("has property {name:?}")),
        ("NotEq", None) => None,
        (_, None) => Some(format!("has no property {name:?}, wanted {}", shown())),
        ("Gt" | "Lt", Some(value)) => {
            let Some(have) = parse_quantity(value) else {
                return Some(format!(
                    "property {name} is {value:?}, not a number, wanted {}",
                    shown()
                ));
            };
            let want = expression.values.first().and_then(|v| parse_quantity(v));
            let holds = match (op, want) {
                ("Gt", Some(want)) => have > want,
                ("Lt", Some(want)) => have < want,
                _ => false,
            };
            (!holds).then(|| format!("property {name} is {value}, wanted {}", shown()))
        }
        ("Eq" | "NotEq", Some(value)) => {
            let equal = expression.values.iter().any(|v| same(v, value));
            (equal != (op == "Eq"))
                .then(|| format!("property {name} is {value}, wanted {}", shown()))
        }
        _ => Some(format!("unknown operator {op:?}")),
    }
}

/// Whether two property values are equal: as numbers when both are, as text otherwise.
fn same(a: &str, b: &str) -> bool {
    match (parse_quantity(a), parse_quantity(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Scores the standings by the policy's preferences.
fn score(policy: &Policy, standings: &mut [Standing<'_>]) {
    let mut totals = vec![0f64; standings.len()];
    for (index, preference) in policy.preferences.iter().enumerate() {
        let weight = f64::from(preference.weight);
        if let Some(sort) = &preference.sort_by {
            let values: Vec<Result<f64, String>> = standings
                .iter()
                .map(|s| match s.candidate.properties.get(&sort.property) {
                    None => Err(format!(
                        "has no property {:?}: scores 0 for preferences[{index}]",
                        sort.property
                    )),
                    Some(v) => parse_quantity(v).ok_or_else(|| {
                        format!(
                            "property {} is {v:?}, not a number: scores 0 for preferences[{index}]",
                            sort.property
                        )
                    }),
                })
                .collect();
            // The range over the clusters that match the affinity.
            let range = standings
                .iter()
                .zip(&values)
                .filter(|(s, _)| s.unmatched.is_none())
                .filter_map(|(_, v)| v.as_ref().ok().copied())
                .fold(None, |range: Option<(f64, f64)>, v| match range {
                    None => Some((v, v)),
                    Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
                });
            for ((standing, value), total) in standings.iter_mut().zip(values).zip(&mut totals) {
                match (value, range) {
                    (Ok(v), Some((lo, hi))) => {
                        let fraction = if hi > lo {
                            let position = (v.clamp(lo, hi) - lo) / (hi - lo);
                            match sort.order {
                                SortOrder::Descending => position,
                                SortOrder::Ascending => 1.0 - position,
                            }
                        } else {
                            1.0
                        };
                        *total += weight * fraction;
                    }
                    (Ok(_), None) => {}
                    (Err(note), _) => standing.notes.push(note),
                }
            }
        } else {
            for (standing, total) in standings.iter().zip(&mut totals) {
                if term_mismatch(
                    preference.label_selector.as_ref(),
                    &preference.properties,
                    standing.candidate,
                )
                .is_none()
                {
                    *total += weight;
                }
            }
        }
    }
    for (standing, total) in standings.iter_mut().zip(totals) {
        standing.score = total.round() as i32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(name: &str, properties: &[(&str, &str)]) -> Candidate {
        Candidate {
            name: name.into(),
            labels: BTreeMap::new(),
            properties: properties
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            unready_for: None,
        }
    }

    fn labelled(mut c: Candidate, labels: &[(&str, &str)]) -> Candidate {
        c.labels = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        c
    }

    fn policy(yaml: &str) -> Policy {
        let policy: Policy = serde_yaml_ng::from_str(yaml).unwrap();
        atoll_api::placement::policy::validate(&policy).unwrap();
        policy
    }

    fn none() -> Previous {
        Previous::default()
    }

    fn chosen(list: &[&str]) -> Previous {
        Previous {
            chosen: list.iter().map(|n| (*n).to_owned()).collect(),
            retained: BTreeSet::new(),
            replaced: BTreeSet::new(),
        }
    }

    fn costs() -> Vec<Candidate> {
        vec![
            candidate("east", &[("cost", "30"), ("cpu.available", "8")]),
            candidate("west", &[("cost", "10"), ("cpu.available", "2")]),
            candidate("north", &[("cost", "20"), ("cpu.available", "16")]),
        ]
    }

    fn decision<'a>(schedule: &'a Schedule, name: &str) -> &'a ClusterDecision {
        schedule
            .decisions
            .iter()
            .find(|d| d.cluster_name == name)
            .unwrap_or_else(|| panic!("no decision for {name}: {:?}", schedule.decisions))
    }

    #[test]
    fn a_large_fleet_lists_the_chosen_and_named_clusters_and_a_few_others() {
        let fleet: Vec<Candidate> = (0..100)
            .map(|i| candidate(&format!("c{i:03}"), &[("cost", &i.to_string())]))
            .collect();
        // PickN of 3: the 3 chosen, then 20 of the 97 others.
        let cheapest = policy(
            "{type: PickN, numberOfClusters: 3, preferences: [{weight: 100, sortBy: {property: cost, order: Ascending}}]}",
        );
        let three = schedule(&cheapest, &fleet, &none());
        assert_eq!(three.chosen, ["c000", "c001", "c002"]);
        assert_eq!(three.decisions.len(), 3 + UNCHOSEN_DECISIONS_MAX);
        assert!(three.decisions[..3].iter().all(|d| d.selected));
        assert!(three.decisions[3..].iter().all(|d| !d.selected));
        assert_eq!(three.verdict.status, "True");
        // PickFixed: every named cluster, the one that is no member too, and no other.
        let fixed = policy("{type: PickFixed, clusterNames: [c050, c099, gone]}");
        let named = schedule(&fixed, &fleet, &none());
        assert_eq!(named.chosen, ["c050", "c099"]);
        assert_eq!(named.decisions.len(), 3);
        assert_eq!(
            decision(&named, "gone").reason,
            "not a member cluster the selector picks"
        );
        // PickAll chooses, and so lists, every one.
        let all = schedule(&Policy::default(), &fleet, &none());
        assert_eq!(all.decisions.len(), 100);
    }

    #[test]
    fn pick_all_takes_every_cluster_that_matches_the_affinity() {
        let all = schedule(&Policy::default(), &costs(), &none());
        assert_eq!(all.chosen, ["east", "north", "west"]);
        assert_eq!(all.verdict.message, "picked all 3 matching clusters");
        let big = policy(
            "{affinity: [{properties: [{property: cpu.available, operator: Gt, values: ['4']}]}]}",
        );
        let some = schedule(&big, &costs(), &none());
        assert_eq!(some.chosen, ["east", "north"]);
        assert_eq!(
            decision(&some, "west").reason,
            "did not match required affinity: property cpu.available is 2, wanted cpu.available Gt 4"
        );
        assert!(!decision(&some, "west").selected);
        // The chosen come first in the decisions.
        assert!(some.decisions[0].selected && some.decisions[1].selected);
        assert_eq!(some.verdict.status, "True");
    }

    #[test]
    fn affinity_terms_are_ored_and_their_criteria_anded() {
        let candidates = vec![
            labelled(candidate("a", &[("cpu", "8")]), &[("env", "prod")]),
            labelled(candidate("b", &[("cpu", "8")]), &[("env", "dev")]),
            labelled(candidate("c", &[("gpu", "1")]), &[("env", "dev")]),
            labelled(candidate("d", &[("cpu", "500m")]), &[("env", "prod")]),
        ];
        let p = policy(
            "{affinity: [{labelSelector: {matchLabels: {env: prod}}, properties: [{property: cpu, operator: Gt, values: ['1']}]}, {properties: [{property: gpu, operator: Exists}]}]}",
        );
        let s = schedule(&p, &candidates, &none());
        assert_eq!(s.chosen, ["a", "c"]);
        assert!(
            decision(&s, "b")
                .reason
                .contains("no term matches (the first: labels do not match)")
        );
        assert!(
            decision(&s, "d")
                .reason
                .contains("property cpu is 500m, wanted cpu Gt 1")
        );
    }

    #[test]
    fn property_expressions_compare_quantities_and_text() {
        let props = BTreeMap::from([
            ("memory".to_owned(), "16Gi".to_owned()),
            ("region".to_owned(), "eu".to_owned()),
            ("cpu".to_owned(), "lots".to_owned()),
        ]);
        let holds = |property: &str, operator: &str, values: &[&str]| {
            expression_mismatch(
                &PropertyExpression {
                    property: property.into(),
                    operator: operator.into(),
                    values: values.iter().map(|v| (*v).to_owned()).collect(),
                },
                &props,
            )
            .is_none()
        };
        assert!(holds("memory", "Gt", &["8Gi"]));
        assert!(holds("memory", "Gt", &["16G"]), "16Gi is more than 16G");
        assert!(!holds("memory", "Lt", &["16Gi"]));
        assert!(holds("memory", "Eq", &["16384Mi"]));
        assert!(holds("region", "Eq", &["us", "eu"]));
        assert!(holds("region", "NotEq", &["us"]));
        assert!(!holds("region", "NotEq", &["eu"]));
        assert!(holds("absent", "NotEq", &["eu"]));
        assert!(!holds("absent", "Eq", &["eu"]));
        assert!(holds("absent", "DoesNotExist", &[]));
        assert!(!holds("region", "DoesNotExist", &[]));
        assert!(holds("region", "Exists", &[]));
        // A value that is not a number never satisfies a numeric comparison, and says why.
        assert!(!holds("cpu", "Gt", &["1"]));
        assert!(!holds("cpu", "Lt", &["1"]));
        let why = expression_mismatch(
            &PropertyExpression {
                property: "cpu".into(),
                operator: "Gt".into(),
                values: vec!["1".into()],
            },
            &props,
        );
        assert_eq!(
            why.unwrap(),
            "property cpu is \"lots\", not a number, wanted cpu Gt 1"
        );
        assert!(!holds("region", "Ge", &["1"]), "an unknown operator");
    }

    #[test]
    fn pick_n_takes_the_best_by_a_sort_normalised_between_min_and_max() {
        let cheapest = policy(
            "{type: PickN, numberOfClusters: 2, preferences: [{weight: 100, sortBy: {property: cost, order: Ascending}}]}",
        );
        let s = schedule(&cheapest, &costs(), &none());
        assert_eq!(s.chosen, ["north", "west"]);
        // 10 is the cheapest (100), 30 the dearest (0), 20 halfway.
        assert_eq!(decision(&s, "west").score, 100);
        assert_eq!(decision(&s, "north").score, 50);
        assert_eq!(decision(&s, "east").score, 0);
        assert_eq!(decision(&s, "west").reason, "in the top 2");
        assert_eq!(decision(&s, "east").reason, "not in the top 2");
        assert_eq!(
            (s.verdict.status, s.verdict.message.as_str()),
            ("True", "picked 2 of 2 clusters")
        );
        let dearest = policy(
            "{type: PickN, numberOfClusters: 1, preferences: [{weight: 40, sortBy: {property: cost}}]}",
        );
        let s = schedule(&dearest, &costs(), &none());
        assert_eq!(s.chosen, ["east"]);
        assert_eq!(decision(&s, "east").score, 40);
        assert_eq!(decision(&s, "north").score, 20);
    }

    #[test]
    fn weights_add_up_and_ties_go_by_name() {
        let candidates = vec![
            labelled(candidate("c", &[("cost", "10")]), &[("tier", "gold")]),
            labelled(candidate("b", &[("cost", "30")]), &[("tier", "gold")]),
            labelled(candidate("a", &[("cost", "30")]), &[]),
            candidate("d", &[("cost", "20"), ("ssd", "true")]),
        ];
        let p = policy(
            "{type: PickN, numberOfClusters: 2, preferences: [{weight: 30, labelSelector: {matchLabels: {tier: gold}}}, {weight: 20, sortBy: {property: cost, order: Ascending}}, {weight: 30, properties: [{property: ssd, operator: Eq, values: ['true']}]}]}",
        );
        let s = schedule(&p, &candidates, &none());
        let scores: Vec<(&str, i32)> = ["a", "b", "c", "d"]
            .iter()
            .map(|n| (*n, decision(&s, n).score))
            .collect();
        assert_eq!(scores, [("a", 0), ("b", 30), ("c", 50), ("d", 40)]);
        assert_eq!(s.chosen, ["c", "d"]);
        // Equal scores: by name.
        let tied = vec![
            candidate("y", &[]),
            candidate("x", &[]),
            candidate("z", &[]),
        ];
        let p = policy("{type: PickN, numberOfClusters: 2}");
        assert_eq!(schedule(&p, &tied, &none()).chosen, ["x", "y"]);
    }

    #[test]
    fn a_value_that_is_not_a_number_scores_lowest_and_says_why() {
        let candidates = vec![
            candidate("a", &[("cost", "cheap")]),
            candidate("b", &[("cost", "30")]),
            candidate("c", &[]),
            candidate("d", &[("cost", "10")]),
        ];
        let p = policy(
            "{type: PickN, numberOfClusters: 2, preferences: [{weight: 100, sortBy: {property: cost, order: Ascending}}]}",
        );
        let s = schedule(&p, &candidates, &none());
        assert_eq!(s.chosen, ["b", "d"], "b scores 0 too but ranks first");
        assert_eq!(
            decision(&s, "a").reason,
            "not in the top 2; property cost is \"cheap\", not a number: scores 0 for preferences[0]"
        );
        assert_eq!(
            decision(&s, "c").reason,
            "not in the top 2; has no property \"cost\": scores 0 for preferences[0]"
        );
        assert_eq!(decision(&s, "b").score, 0);
    }

    #[test]
    fn decisions_are_stable_and_only_missing_slots_are_filled() {
        let p = policy(
            "{type: PickN, numberOfClusters: 2, preferences: [{weight: 100, sortBy: {property: cost, order: Ascending}}]}",
        );
        let first = schedule(&p, &costs(), &none());
        assert_eq!(first.chosen, ["north", "west"]);
        let previous = Previous {
            chosen: first.chosen.iter().cloned().collect(),
            retained: BTreeSet::new(),
            replaced: BTreeSet::new(),
        };
        // East became the cheapest: the Work stays where it is.
        let mut cheaper = costs();
        cheaper[0].properties.insert("cost".into(), "1".into());
        let again = schedule(&p, &cheaper, &previous);
        assert_eq!(again.chosen, ["north", "west"]);
        assert_eq!(decision(&again, "east").score, 100);
        assert_eq!(
            decision(&again, "east").reason,
            "the 2 clusters chosen before still match (decisions are stable)"
        );
        assert_eq!(
            decision(&again, "west").reason,
            "chosen before and still matches"
        );
        // Three wanted: east is added, the others stay.
        let three = policy(
            "{type: PickN, numberOfClusters: 3, preferences: [{weight: 100, sortBy: {property: cost, order: Ascending}}]}",
        );
        assert_eq!(
            schedule(&three, &cheaper, &previous).chosen,
            ["east", "north", "west"]
        );
        // One wanted: the lower score of the kept goes.
        let one = policy(
            "{type: PickN, numberOfClusters: 1, preferences: [{weight: 100, sortBy: {property: cost, order: Ascending}}]}",
        );
        assert_eq!(schedule(&one, &costs(), &previous).chosen, ["west"]);
        // A kept cluster that stops matching the affinity is replaced by the best other.
        let big = policy(
            "{type: PickN, numberOfClusters: 2, affinity: [{properties: [{property: cpu.available, operator: Gt, values: ['4']}]}]}",
        );
        assert_eq!(
            schedule(&big, &costs(), &previous).chosen,
            ["east", "north"]
        );
        // One that left the inventory is replaced.
        let gone: Vec<Candidate> = costs().into_iter().filter(|c| c.name != "west").collect();
        assert_eq!(schedule(&p, &gone, &previous).chosen, ["east", "north"]);
    }

    #[test]
    fn too_few_clusters_place_what_was_found_and_say_so() {
        let p = policy(
            "{type: PickN, numberOfClusters: 3, affinity: [{properties: [{property: cpu.available, operator: Gt, values: ['4']}]}]}",
        );
        let s = schedule(&p, &costs(), &none());
        assert_eq!(s.chosen, ["east", "north"]);
        assert_eq!(
            s.verdict,
            Verdict {
                status: "False",
                reason: "NotEnoughClusters",
                message: "found 2 of 3 clusters: 1 did not match required affinity".into(),
            }
        );
        // A cluster that is not ready is not chosen anew, and is counted.
        let mut candidates = costs();
        candidates[2].unready_for = Some(Duration::from_secs(1000));
        let p = policy("{type: PickN, numberOfClusters: 3}");
        let s = schedule(&p, &candidates, &none());
        assert_eq!(s.chosen, ["east", "west"]);
        assert_eq!(s.verdict.message, "found 2 of 3 clusters, 1 not ready");
        assert_eq!(
            decision(&s, "north").reason,
            "not ready: only ready clusters are chosen anew"
        );
        // One chosen before is kept while not ready (no failover here).
        let s = schedule(&p, &candidates, &chosen(&["north"]));
        assert_eq!(s.chosen, ["east", "north", "west"]);
    }

    #[test]
    fn a_chosen_cluster_not_ready_past_the_failover_delay_is_replaced_by_the_next_best() {
        let p = policy(
            "{type: PickN, numberOfClusters: 2, failover: {afterSeconds: 60}, preferences: [{weight: 100, sortBy: {property: cost, order: Ascending}}]}",
        );
        let previous = chosen(&["north", "west"]);
        let mut candidates = costs();
        // West missed a few heartbeats: nothing moves, and the hub wakes when the delay ends.
        candidates[1].unready_for = Some(Duration::from_secs(20));
        let s = schedule(&p, &candidates, &previous);
        assert_eq!(s.chosen, ["north", "west"]);
        assert_eq!(s.wake, Some(Duration::from_secs(40)));
        // Past the delay: east replaces it, and west's Work goes.
        candidates[1].unready_for = Some(Duration::from_secs(61));
        let s = schedule(&p, &candidates, &previous);
        assert_eq!(s.chosen, ["east", "north"]);
        assert_eq!(s.wake, None);
        assert!(s.retained.is_empty());
        assert_eq!(
            decision(&s, "west").reason,
            "not ready for 61s, past failover.afterSeconds 60: replaced"
        );
        assert_eq!(decision(&s, "east").reason, "in the top 2");
        // Scheduled again while west is still away, it stays replaced, as said.
        candidates[1].unready_for = Some(Duration::from_secs(70));
        let after = Previous {
            replaced: ["west".to_owned()].into(),
            ..chosen(&["east", "north"])
        };
        let again = schedule(&p, &candidates, &after);
        assert_eq!(again.chosen, ["east", "north"]);
        assert_eq!(
            decision(&again, "west").reason,
            "not ready for 70s, past failover.afterSeconds 60: replaced"
        );
        // West back and ready: the Work does not move back.
        let mut back = costs();
        back[1].unready_for = None;
        let again = schedule(&p, &back, &chosen(&["east", "north"]));
        assert_eq!(again.chosen, ["east", "north"]);
        // Without a cluster to replace it, it keeps the Work.
        let two: Vec<Candidate> = candidates
            .iter()
            .filter(|c| c.name != "east")
            .cloned()
            .collect();
        let s = schedule(&p, &two, &previous);
        assert_eq!(s.chosen, ["north", "west"]);
        assert!(
            decision(&s, "west")
                .reason
                .ends_with("but no ready cluster can replace it")
        );
        // Without failover, a chosen cluster keeps the Work whatever its health.
        let plain = policy("{type: PickN, numberOfClusters: 2}");
        assert_eq!(
            schedule(&plain, &candidates, &previous).chosen,
            ["north", "west"]
        );
        assert_eq!(schedule(&plain, &candidates, &previous).wake, None);
    }

    #[test]
    fn purge_on_return_false_keeps_the_work_of_a_cluster_failed_over_from() {
        let p = policy(
            "{type: PickN, numberOfClusters: 2, failover: {afterSeconds: 60, purgeOnReturn: false}}",
        );
        let mut candidates = costs();
        candidates[1].unready_for = Some(Duration::from_secs(600));
        let s = schedule(&p, &candidates, &chosen(&["north", "west"]));
        assert_eq!(s.chosen, ["east", "north"]);
        assert_eq!(s.retained, ["west"]);
        assert!(decision(&s, "west").retained);
        assert!(
            decision(&s, "west")
                .reason
                .ends_with("its Work stays (failover.purgeOnReturn is false)")
        );
        // A cluster that never had the Work is never retained, however long it is not ready.
        let mut long_gone = costs();
        long_gone[0].unready_for = Some(Duration::from_secs(600));
        let other = schedule(&p, &long_gone, &chosen(&["north", "west"]));
        assert!(other.retained.is_empty());
        assert_eq!(
            decision(&other, "east").reason,
            "not ready: only ready clusters are chosen anew"
        );
        // Back and ready: still retained, not chosen again.
        let previous = Previous {
            chosen: s.chosen.iter().cloned().collect(),
            retained: s.retained.iter().cloned().collect(),
            replaced: ["west".to_owned()].into(),
        };
        let s = schedule(&p, &costs(), &previous);
        assert_eq!(
            (s.chosen.clone(), s.retained.clone()),
            (
                vec!["east".to_owned(), "north".to_owned()],
                vec!["west".to_owned()]
            )
        );
        // Gone from the inventory: forgotten.
        let gone: Vec<Candidate> = costs().into_iter().filter(|c| c.name != "west").collect();
        assert!(schedule(&p, &gone, &previous).retained.is_empty());
    }

    #[test]
    fn a_spread_takes_one_per_label_value_before_a_second_and_unlabelled_last() {
        // In order of preference: a, b (eu), c (us), d (no region), e (us).
        let candidates = vec![
            labelled(candidate("a", &[("cost", "1")]), &[("region", "eu")]),
            labelled(candidate("b", &[("cost", "2")]), &[("region", "eu")]),
            labelled(candidate("c", &[("cost", "3")]), &[("region", "us")]),
            candidate("d", &[("cost", "4")]),
            labelled(candidate("e", &[("cost", "5")]), &[("region", "us")]),
        ];
        let pick = |n: usize, previous: &Previous| {
            let p = policy(&format!(
                "{{type: PickN, numberOfClusters: {n}, topologySpread: {{topologyKey: region}}, preferences: [{{weight: 100, sortBy: {{property: cost, order: Ascending}}}}]}}"
            ));
            schedule(&p, &candidates, previous).chosen
        };
        assert_eq!(pick(2, &none()), ["a", "c"]);
        let p = policy(
            "{type: PickN, numberOfClusters: 2, topologySpread: {topologyKey: region}, preferences: [{weight: 100, sortBy: {property: cost, order: Ascending}}]}",
        );
        let s = schedule(&p, &candidates, &none());
        assert_eq!(
            decision(&s, "b").reason,
            "region=eu already has a chosen cluster (topologySpread)"
        );
        assert_eq!(decision(&s, "d").reason, "not in the top 2");
        assert_eq!(pick(3, &none()), ["a", "b", "c"]);
        assert_eq!(pick(4, &none()), ["a", "b", "c", "e"]);
        assert_eq!(pick(5, &none()), ["a", "b", "c", "d", "e"]);
        // The clusters kept count: with two in eu kept, the next goes to us.
        assert_eq!(pick(3, &chosen(&["a", "b"])), ["a", "b", "c"]);
        let plain = policy(
            "{type: PickN, numberOfClusters: 2, preferences: [{weight: 100, sortBy: {property: cost, order: Ascending}}]}",
        );
        assert_eq!(schedule(&plain, &candidates, &none()).chosen, ["a", "b"]);
    }

    #[test]
    fn pick_fixed_takes_the_named_clusters_and_names_the_missing() {
        let p = policy("{type: PickFixed, clusterNames: [west, south]}");
        let s = schedule(&p, &costs(), &none());
        assert_eq!(s.chosen, ["west"]);
        assert_eq!(
            s.verdict.message,
            "found 1 of 2 clusters: not member clusters the selector picks: south"
        );
        assert!(
            s.decisions.iter().all(|d| d.cluster_name != "east"),
            "a cluster PickFixed does not name gets no decision: {:?}",
            s.decisions
        );
        assert_eq!(
            decision(&s, "south").reason,
            "not a member cluster the selector picks"
        );
        let both = policy("{type: PickFixed, clusterNames: [west, east]}");
        let s = schedule(&both, &costs(), &none());
        assert_eq!(s.chosen, ["east", "west"]);
        assert_eq!(s.verdict.status, "True");
    }
}
