//! The shipped Grafana dashboard (`docs/grafana/cuzk.json`) against a live daemon's `/metrics`:
//! every metric its queries read is exported, with every label they match or group by, so a
//! renamed metric or label fails here instead of leaving an empty panel in production.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use cuzk_daemon::circuits::synthetic::SyntheticRequest;
use cuzk_daemon::proto::await_proof_response::Status;
use cuzk_groth16::backend::{Faults, FaultyBackend};
use cuzk_groth16::ProverBackend;

use crate::rpcs::{http, prove, synthetic, Running, SaysGpu};

const DASHBOARD: &str = include_str!("../../../../docs/grafana/cuzk.json");

/// Labels Prometheus adds to every series when it scrapes: the daemon never exports them.
const TARGET_LABELS: [&str; 2] = ["instance", "job"];

/// One metric a query reads, with the labels it matches on or groups it by.
#[derive(Debug, PartialEq)]
struct Use {
    metric: String,
    labels: BTreeSet<String>,
}

#[derive(Debug, PartialEq)]
enum Token<'a> {
    Ident(&'a str),
    Punct(char),
    /// Numbers, durations, strings, operators and Grafana's `$variables`: never a name.
    Other,
}

/// PromQL cut into the tokens that matter for names: identifiers and brackets.
fn tokens(expr: &str) -> Vec<Token<'_>> {
    let bytes = expr.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b':';
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let start = i;
        i += 1;
        match b {
            b'"' | b'\'' | b'`' => {
                while i < bytes.len() && bytes[i] != b {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push(Token::Other);
            }
            b'$' if bytes.get(i) == Some(&b'{') => {
                while i < bytes.len() && bytes[i - 1] != b'}' {
                    i += 1;
                }
                out.push(Token::Other);
            }
            b'$' | b'0'..=b'9' | b'.' => {
                // A variable, a number (`1e-9` included) or a duration (`5m`).
                while i < bytes.len()
                    && (word(bytes[i])
                        || bytes[i] == b'.'
                        || (matches!(bytes[i], b'-' | b'+') && matches!(bytes[i - 1], b'e' | b'E')))
                {
                    i += 1;
                }
                out.push(Token::Other);
            }
            b'(' | b')' | b'{' | b'}' | b'[' | b']' => out.push(Token::Punct(char::from(b))),
            _ if word(b) => {
                while i < bytes.len() && word(bytes[i]) {
                    i += 1;
                }
                out.push(Token::Ident(&expr[start..i]));
            }
            _ if b.is_ascii_whitespace() => {}
            _ => out.push(Token::Other),
        }
    }
    out
}

/// Keywords followed by a list of labels, never of metrics.
const LABEL_LISTS: [&str; 6] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];
/// Keywords that are operators or literals.
const KEYWORDS: [&str; 8] = [
    "and", "or", "unless", "bool", "offset", "atan2", "inf", "nan",
];

/// The metrics one PromQL expression reads. PromQL's grammar does the sorting, so no list of
/// functions is kept: an identifier followed by `(` (or by `by`/`without`, as in
/// `sum by (x) (…)`) is a function or an aggregation; identifiers inside `{…}` are label
/// matchers of the metric just before; `[…]` holds a duration; keyword lists hold labels. Any
/// other identifier is a metric. The labels of a `by (…)` are asked of every metric inside the
/// aggregation it belongs to, written before (`sum by (l) (…)`) or after (`sum(…) by (l)`).
fn uses(expr: &str) -> Result<Vec<Use>, String> {
    let tokens = tokens(expr);
    // Where each bracket closes and opens.
    let mut close = BTreeMap::new();
    let mut open = BTreeMap::new();
    let mut stack = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        let pair = match token {
            Token::Punct('(' | '{' | '[') => {
                stack.push(i);
                continue;
            }
            Token::Punct(')') => Token::Punct('('),
            Token::Punct('}') => Token::Punct('{'),
            Token::Punct(']') => Token::Punct('['),
            _ => continue,
        };
        match stack.pop() {
            Some(start) if tokens[start] == pair => {
                close.insert(start, i);
                open.insert(i, start);
            }
            _ => return Err(format!("unbalanced brackets in `{expr}`")),
        }
    }
    if !stack.is_empty() {
        return Err(format!("unbalanced brackets in `{expr}`"));
    }
    let ident = |i: usize| match tokens.get(i) {
        Some(Token::Ident(name)) => Some(*name),
        _ => None,
    };
    let opens = |i: usize| tokens.get(i) == Some(&Token::Punct('('));
    let idents_between = |from: usize, to: usize| -> BTreeSet<String> {
        (from..to).filter_map(ident).map(str::to_owned).collect()
    };

    let mut found: Vec<(usize, Use)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let end = close.get(&i).copied().unwrap_or(i);
        match tokens[i] {
            Token::Punct('{') => {
                if let Some((at, used)) = found.last_mut() {
                    if *at + 1 == i {
                        used.labels.extend(idents_between(i, end));
                    }
                }
                i = end;
            }
            Token::Punct('[') => i = end,
            Token::Ident(word) if LABEL_LISTS.contains(&word) && opens(i + 1) => {
                i = close.get(&(i + 1)).copied().unwrap_or(i);
            }
            Token::Ident(word)
                if KEYWORDS.contains(&word)
                    || LABEL_LISTS.contains(&word)
                    || opens(i + 1)
                    || matches!(ident(i + 1), Some("by" | "without")) => {}
            Token::Ident(name) => found.push((
                i,
                Use {
                    metric: name.to_owned(),
                    labels: BTreeSet::new(),
                },
            )),
            _ => {}
        }
        i += 1;
    }

    for by in (0..tokens.len()).filter(|&i| ident(i) == Some("by") && opens(i + 1)) {
        let Some(&list_end) = close.get(&(by + 1)) else {
            continue;
        };
        let labels = idents_between(by + 1, list_end);
        // The aggregation's argument: after the list, or the group just before `by`.
        let argument = if ident(by.wrapping_sub(1)).is_some() {
            close.get(&(list_end + 1)).map(|&end| (list_end + 1, end))
        } else {
            open.get(&by.wrapping_sub(1)).map(|&start| (start, by - 1))
        };
        if let Some((start, end)) = argument {
            for (_, used) in found.iter_mut().filter(|(at, _)| (start..end).contains(at)) {
                used.labels.extend(labels.iter().cloned());
            }
        }
    }
    Ok(found.into_iter().map(|(_, used)| used).collect())
}

/// Every query of a dashboard: each panel's targets (rows' nested panels too) and each
/// `label_values(metric, label)` variable, read as `sum by (label) (metric)`, its meaning.
fn queries(dashboard: &serde_json::Value) -> Vec<String> {
    fn panels(list: &serde_json::Value, out: &mut Vec<String>) {
        for panel in list.as_array().into_iter().flatten() {
            for target in panel["targets"].as_array().into_iter().flatten() {
                out.extend(target["expr"].as_str().map(str::to_owned));
            }
            panels(&panel["panels"], out);
        }
    }
    let mut out = Vec::new();
    panels(&dashboard["panels"], &mut out);
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let query = &variable["query"];
        let text = query["query"].as_str().or(query.as_str()).unwrap_or("");
        if let Some(args) = text
            .strip_prefix("label_values(")
            .and_then(|rest| rest.strip_suffix(')'))
        {
            let (metric, label) = args.rsplit_once(',').unwrap_or(("", args));
            out.push(format!("sum by ({}) ({metric})", label.trim()));
        }
    }
    out
}

/// A metric family of the exposition text: its type and the labels its samples carry.
#[derive(Debug, Default)]
struct Family {
    kind: String,
    labels: BTreeSet<String>,
}

/// The families of a `/metrics` scrape, by name.
fn families(scrape: &str) -> BTreeMap<String, Family> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    for line in scrape.lines() {
        if let Some(typed) = line.strip_prefix("# TYPE ") {
            let (name, kind) = typed.split_once(' ').unwrap_or((typed, ""));
            families.entry(name.to_owned()).or_default().kind = kind.to_owned();
        }
    }
    for line in scrape.lines().filter(|line| !line.starts_with('#')) {
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let Some(family) = family_of(&families, &line[..name_end]) else {
            continue;
        };
        let labels = sample_labels(line[name_end..].strip_prefix('{').unwrap_or(""));
        if let Some(family) = families.get_mut(&family) {
            family.labels.extend(labels);
        }
    }
    families
}

/// The family a series name belongs to: itself, or the histogram or summary whose `_bucket`,
/// `_sum` or `_count` it is.
fn family_of(families: &BTreeMap<String, Family>, name: &str) -> Option<String> {
    if families.contains_key(name) {
        return Some(name.to_owned());
    }
    ["_bucket", "_sum", "_count"]
        .iter()
        .filter_map(|suffix| name.strip_suffix(suffix))
        .find(|base| {
            families
                .get(*base)
                .is_some_and(|f| f.kind == "histogram" || f.kind == "summary")
        })
        .map(str::to_owned)
}

/// The label names of one sample's `a="x",b="y"}` (values may hold escaped quotes).
fn sample_labels(mut rest: &str) -> Vec<String> {
    let mut names = Vec::new();
    while let Some((name, value)) = rest.split_once("=\"") {
        names.push(name.trim_start_matches(',').trim().to_owned());
        let mut escaped = false;
        let end = value
            .char_indices()
            .find(|&(_, c)| {
                let quote = c == '"' && !escaped;
                escaped = c == '\\' && !escaped;
                quote
            })
            .map_or(value.len(), |(at, _)| at + 1);
        rest = &value[end..];
        if rest.starts_with('}') {
            break;
        }
    }
    names
}

/// What the dashboard reads that the scrape lacks: one line per missing metric or label.
fn check(dashboard: &str, scrape: &str) -> Vec<String> {
    let dashboard: serde_json::Value = match serde_json::from_str(dashboard) {
        Ok(value) => value,
        Err(e) => return vec![format!("the dashboard is not JSON: {e}")],
    };
    let families = families(scrape);
    let mut problems = BTreeSet::new();
    for query in queries(&dashboard) {
        let used = match uses(&query) {
            Ok(used) => used,
            Err(e) => {
                problems.insert(e);
                continue;
            }
        };
        for used in used {
            let Some(family_name) = family_of(&families, &used.metric) else {
                problems.insert(format!("{} is not exported (in `{query}`)", used.metric));
                continue;
            };
            let family = &families[&family_name];
            if used.metric == family_name && family.kind != "counter" && family.kind != "gauge" {
                // Prometheus stores a histogram only as its `_bucket`, `_sum` and `_count`.
                problems.insert(format!(
                    "{family_name} is a {}: read its parts",
                    family.kind
                ));
            }
            let labels = &family.labels;
            for label in &used.labels {
                if !labels.contains(label) && !TARGET_LABELS.contains(&label.as_str()) {
                    problems.insert(format!("{family_name} has no label {label} (in `{query}`)"));
                }
            }
        }
    }
    problems.into_iter().collect()
}

fn used(metric: &str, labels: &[&str]) -> Use {
    Use {
        metric: metric.to_owned(),
        labels: labels.iter().map(|l| (*l).to_owned()).collect(),
    }
}

#[test]
fn names_and_labels_are_read_from_promql() {
    let quantile = r#"histogram_quantile(0.9, sum by (le, proof_kind) (rate(a_bucket{instance=~"$instance"}[$__rate_interval])))"#;
    assert_eq!(
        uses(quantile).unwrap(),
        [used("a_bucket", &["instance", "le", "proof_kind"])]
    );
    // `by` after its argument, a binary operator between two selectors, `on (…)` and numbers.
    let ratio = r#"sum(rate(b{x="1"}[5m])) by (device) / on (device) group_left clamp_min(c, 1e-9) > bool 0.5"#;
    assert_eq!(
        uses(ratio).unwrap(),
        [used("b", &["device", "x"]), used("c", &[])]
    );
    // A `by` list binds only the aggregation it belongs to.
    assert_eq!(
        uses("max by (k) (d) + sum(e offset 1h)").unwrap(),
        [used("d", &["k"]), used("e", &[])]
    );
    let dashboard = r#"{"templating":{"list":[{"query":{"query":"label_values(f, instance)"}}]}}"#;
    let queries = queries(&serde_json::from_str(dashboard).unwrap());
    assert_eq!(queries, ["sum by (instance) (f)"]);
    assert_eq!(uses(&queries[0]).unwrap(), [used("f", &["instance"])]);
    assert!(uses("sum(rate(a[5m])").is_err());
    assert!(uses("sum(a]").is_err());
}

#[test]
fn a_scrape_is_read_into_families_with_their_labels() {
    let scrape = "# TYPE h histogram\nh_bucket{k=\"a,\\\"b\",le=\"+Inf\"} 1\nh_sum{k=\"a\"} 2\n\
                  # TYPE g gauge\ng 3\n# TYPE g_count counter\ng_count 1\n";
    let families = families(scrape);
    assert_eq!(
        families["h"].labels,
        BTreeSet::from(["k", "le"].map(String::from))
    );
    assert!(families["g"].labels.is_empty());
    assert_eq!(family_of(&families, "h_count").as_deref(), Some("h"));
    // A counter whose name ends in `_count` is its own family, not a part of `g`.
    assert_eq!(family_of(&families, "g_count").as_deref(), Some("g_count"));
    assert_eq!(family_of(&families, "g_bucket"), None);
    // A histogram read by its bare name has no series in Prometheus.
    let dashboard = r#"{"panels":[{"targets":[{"expr":"rate(h[5m])"}]}]}"#;
    assert_eq!(
        check(dashboard, scrape),
        ["h is a histogram: read its parts"]
    );
}

/// A daemon with a dead second device proves until every family has a series (a labelled
/// family is exported only once one of its series exists: device faults need a fault); then the
/// dashboard checks clean against its `/metrics`, reads every family, and fails, naming it, when
/// a metric or a label is renamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_dashboard_reads_only_what_the_daemon_exports() {
    let dead = FaultyBackend::new(Arc::new(SaysGpu(1, "cuda:1 (test)")), Faults::From(0));
    let alive = SaysGpu(0, "cuda:0 (test)");
    let backends: Vec<Arc<dyn ProverBackend>> = vec![Arc::new(alive), Arc::new(dead)];
    let daemon = Running::start("", Some(backends)).await;
    let status = daemon.bound.status.unwrap();
    let mut client = daemon.client().await;
    let spec = SyntheticRequest {
        partitions: 2,
        ..SyntheticRequest::new(64)
    };
    let mut scrape = String::new();
    for round in 0..10 {
        let done = prove(&mut client, synthetic(&format!("grafana-{round}"), &spec)).await;
        assert_eq!(done.status(), Status::Completed, "{}", done.error_message);
        let (code, body) = http(status, "GET", "/metrics").await;
        assert_eq!(code, 200);
        scrape = body;
        if scrape.contains("# TYPE cuzk_device_faults_total") {
            break;
        }
    }

    let problems = check(DASHBOARD, &scrape);
    assert!(problems.is_empty(), "{problems:#?}\nin\n{scrape}");
    // And the other way: every family the daemon exports has a panel.
    let exported = families(&scrape);
    let read: BTreeSet<String> = queries(&serde_json::from_str(DASHBOARD).unwrap())
        .iter()
        .flat_map(|query| uses(query).unwrap())
        .filter_map(|used| family_of(&exported, &used.metric))
        .collect();
    for family in exported.keys() {
        assert!(
            read.contains(family),
            "{family} is exported but no panel of docs/grafana/cuzk.json reads it"
        );
    }

    // A metric renamed (a plain one, and a histogram read through its `_bucket`), and a label.
    for (from, to, named) in [
        (
            "cuzk_partition_retries_total",
            "cuzk_partition_retried_total",
            "cuzk_partition_retried_total is not exported",
        ),
        (
            "cuzk_srs_load_seconds",
            "cuzk_srs_loading_seconds",
            "cuzk_srs_loading_seconds_bucket is not exported",
        ),
        (
            "by (device)",
            "by (gpu)",
            "cuzk_gpu_busy_seconds_total has no label gpu",
        ),
    ] {
        assert!(DASHBOARD.contains(from), "{from}");
        let problems = check(&DASHBOARD.replace(from, to), &scrape);
        assert!(
            problems.iter().any(|p| p.starts_with(named)),
            "renaming {from} to {to}: {problems:#?}"
        );
    }
    daemon.stop().await.unwrap();
}
