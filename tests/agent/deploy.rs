//! `deploy/` held to what it claims, with the real tools:
//! - the alerting rules pass `promtool check rules`, their unit tests pass
//!   `promtool test rules`, every alert has a firing and a silent case, and each test fails
//!   when its alert is made unable to fire (so a test cannot pass by matching nothing);
//! - a Prometheus configuration made of `scrape.yml` and the rules passes
//!   `promtool check config`, and a real Prometheus (on loopback) applies the scrape
//!   relabelling to the labels Kubernetes gives the DaemonSet's pod: kept, job="rocetap",
//!   node named;
//! - the DaemonSet, Namespace, ServiceAccount, PodMonitor and the PrometheusRule that
//!   deploy/README.md's command makes pass strict offline schema validation
//!   (`deploy/validate.py`), and broken copies of them fail it;
//! - the manifests agree with each other and with the agent's command line (selectors,
//!   port names, the dump directory, the node name);
//! - every metric name the rules, their tests and the deploy docs use is in
//!   `deploy/metrics.txt`, the list the agent's own test holds the exporter to.
//!
//! Needs promtool and prometheus (Debian's `prometheus` package) and python3 with
//! kubernetes-validate, jsonschema and cloudcoil-models-prometheus-operator (`.ci/run`
//! installs them); without them a test prints `SKIP:` and passes — unless `CI` is set.

use crate::common;

use common::{have, skip, TempDir};
use std::collections::BTreeSet;
use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

fn deploy(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(rel)
}

fn read(rel: &str) -> String {
    fs::read_to_string(deploy(rel)).unwrap_or_else(|e| panic!("deploy/{rel}: {e}"))
}

fn yaml(rel: &str) -> Vec<Yaml> {
    YamlLoader::load_from_str(&read(rel)).unwrap_or_else(|e| panic!("deploy/{rel}: {e}"))
}

fn emit(doc: &Yaml) -> String {
    let mut out = String::new();
    YamlEmitter::new(&mut out).dump(doc).expect("emit YAML");
    out
}

fn key(k: &str) -> Yaml {
    Yaml::String(k.to_string())
}

fn str_of<'a>(y: &'a Yaml, what: &str) -> &'a str {
    y.as_str()
        .unwrap_or_else(|| panic!("{what} is not a string: {y:?}"))
}

fn list<'a>(y: &'a Yaml, what: &str) -> &'a Vec<Yaml> {
    y.as_vec()
        .unwrap_or_else(|| panic!("{what} is not a list: {y:?}"))
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn have_promtool() -> bool {
    if have("promtool") {
        return true;
    }
    skip("promtool is not installed (Debian package prometheus)");
    false
}

// ---------------------------------------------------------------- the alerting rules

/// (alert name, rule) of every alerting rule, in file order.
fn alerts(rules: &Yaml) -> Vec<(String, Yaml)> {
    let mut out = Vec::new();
    for group in list(&rules["groups"], "groups") {
        for rule in list(&group["rules"], "rules") {
            if let Some(name) = rule["alert"].as_str() {
                out.push((name.to_string(), rule.clone()));
            }
        }
    }
    out
}

#[test]
fn rules_pass_promtool_check() {
    if !have_promtool() {
        return;
    }
    // alerting and recording rules (the fleet's loss matrix) alike
    let n: usize = list(&yaml("prometheus/rocetap-rules.yml")[0]["groups"], "groups")
        .iter()
        .map(|g| list(&g["rules"], "rules").len())
        .sum();
    let o = run(Command::new("promtool")
        .args(["check", "rules"])
        .arg(deploy("prometheus/rocetap-rules.yml")));
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains(&format!("SUCCESS: {n} rules found")),
        "{}",
        text(&o)
    );
}

#[test]
fn rule_unit_tests_pass_promtool_test() {
    if !have_promtool() {
        return;
    }
    let o = run(Command::new("promtool")
        .args(["test", "rules"])
        .arg(deploy("prometheus/rocetap-rules.test.yml")));
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("SUCCESS"), "{}", text(&o));
}

/// Every alert has an evaluation that expects it to fire and one that expects silence, and
/// no test names an alert the rules do not have (promtool passes an `exp_alerts: []` for
/// an alert that does not exist).
#[test]
fn every_alert_has_a_firing_and_a_silent_test() {
    let names: BTreeSet<String> = alerts(&yaml("prometheus/rocetap-rules.yml")[0])
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let tests = &yaml("prometheus/rocetap-rules.test.yml")[0];
    let (mut fires, mut silent) = (BTreeSet::new(), BTreeSet::new());
    for t in list(&tests["tests"], "tests") {
        for case in list(&t["alert_rule_test"], "alert_rule_test") {
            let name = str_of(&case["alertname"], "alertname").to_string();
            assert!(names.contains(&name), "a test names unknown alert {name}");
            match case["exp_alerts"].as_vec() {
                Some(v) if !v.is_empty() => fires.insert(name),
                _ => silent.insert(name),
            };
        }
    }
    for n in &names {
        assert!(fires.contains(n), "no test expects {n} to fire");
        assert!(silent.contains(n), "no test expects {n} to stay silent");
    }
}

/// Writes the rules (possibly changed) beside the unit tests in `dir` and runs promtool.
fn promtool_test_with(dir: &TempDir, rules: &Yaml) -> Output {
    fs::write(dir.path("rocetap-rules.yml"), emit(rules)).unwrap();
    fs::copy(
        deploy("prometheus/rocetap-rules.test.yml"),
        dir.path("rocetap-rules.test.yml"),
    )
    .unwrap();
    run(Command::new("promtool")
        .args(["test", "rules"])
        .arg(dir.path("rocetap-rules.test.yml")))
}

/// Replaces the expression of the alert named `name`.
fn with_expr(rules: &Yaml, name: &str, expr: &str) -> Yaml {
    let mut rules = rules.clone();
    let Yaml::Hash(top) = &mut rules else {
        panic!("rules are not a mapping")
    };
    let Some(Yaml::Array(groups)) = top.get_mut(&key("groups")) else {
        panic!("no groups")
    };
    for group in groups {
        let Some(Yaml::Array(rs)) = group.as_mut_hash().and_then(|g| g.get_mut(&key("rules")))
        else {
            panic!("a group without rules")
        };
        for r in rs {
            let h = r.as_mut_hash().expect("a rule is a mapping");
            if h.get(&key("alert")).and_then(Yaml::as_str) == Some(name) {
                h.insert(key("expr"), key(expr));
            }
        }
    }
    rules
}

/// The unit tests must notice an alert that can no longer fire: each alert's expression
/// in turn becomes one that is never true, and promtool must then fail. The unchanged
/// rules, written the same way, must pass (the rewriting itself breaks nothing).
#[test]
fn each_alert_test_fails_when_the_alert_cannot_fire() {
    if !have_promtool() {
        return;
    }
    let rules = &yaml("prometheus/rocetap-rules.yml")[0];
    let dir = TempDir::new("deploy-mutants");
    let o = promtool_test_with(&dir, rules);
    assert!(o.status.success(), "the rewritten rules: {}", text(&o));
    for (name, _) in alerts(rules) {
        let o = promtool_test_with(&dir, &with_expr(rules, &name, "vector(0) > 1"));
        assert!(
            !o.status.success(),
            "promtool test rules passed although {name} can never fire"
        );
        assert!(
            text(&o).contains(&format!("alertname: {name}")),
            "the failure is not about {name}: {}",
            text(&o)
        );
    }
}

// ---------------------------------------------------------------- the scrape configuration

/// Debian's Prometheus is built without Kubernetes service discovery, so its promtool
/// rejects `kubernetes_sd_configs`. Where that is so, each job's Kubernetes discovery is
/// replaced by `static_configs` holding `targets` (everything else of the job is checked as
/// written).
fn without_kubernetes_sd(scrape: &Yaml, targets: &[(String, Vec<(&str, &str)>)]) -> Yaml {
    let mut scrape = scrape.clone();
    let jobs = scrape
        .as_mut_hash()
        .and_then(|h| h.get_mut(&key("scrape_configs")))
        .and_then(Yaml::as_mut_vec)
        .expect("scrape_configs");
    for job in jobs {
        let h = job.as_mut_hash().expect("a scrape config is a mapping");
        if h.remove(&key("kubernetes_sd_configs")).is_none() {
            continue;
        }
        let statics = targets
            .iter()
            .map(|(addr, labels)| {
                let mut t = yaml_rust2::yaml::Hash::new();
                t.insert(key("targets"), Yaml::Array(vec![key(addr)]));
                let mut l = yaml_rust2::yaml::Hash::new();
                for (k, v) in labels {
                    l.insert(key(k), key(v));
                }
                t.insert(key("labels"), Yaml::Hash(l));
                Yaml::Hash(t)
            })
            .collect();
        h.insert(key("static_configs"), Yaml::Array(statics));
    }
    scrape
}

/// A prometheus.yml of `rule_files` (the rules, copied into `dir`) and `scrape`.
fn prometheus_config(dir: &TempDir, scrape: &Yaml) -> PathBuf {
    fs::copy(
        deploy("prometheus/rocetap-rules.yml"),
        dir.path("rocetap-rules.yml"),
    )
    .unwrap();
    let mut cfg = scrape.as_hash().expect("scrape.yml is a mapping").clone();
    cfg.insert(
        key("rule_files"),
        Yaml::Array(vec![key("rocetap-rules.yml")]),
    );
    let path = dir.path("prometheus.yml");
    fs::write(&path, emit(&Yaml::Hash(cfg))).unwrap();
    path
}

#[test]
fn scrape_config_and_rules_pass_promtool_check_config() {
    if !have_promtool() {
        return;
    }
    let dir = TempDir::new("deploy-config");
    let scrape = &yaml("prometheus/scrape.yml")[0];
    let check = |cfg: &Path| run(Command::new("promtool").args(["check", "config"]).arg(cfg));
    let o = check(&prometheus_config(&dir, scrape));
    if !o.status.success() && text(&o).contains("field kubernetes_sd_configs not found") {
        eprintln!("promtool has no Kubernetes discovery; checking the jobs with static targets");
        let pod = vec![("127.0.0.1:9470".to_string(), Vec::new())];
        let o = check(&prometheus_config(
            &dir,
            &without_kubernetes_sd(scrape, &pod),
        ));
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("SUCCESS"), "{}", text(&o));
    } else {
        assert!(o.status.success(), "{}", text(&o));
    }
}

/// A process killed and reaped when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().unwrap().port()
}

/// The JSON body of GET `path` on 127.0.0.1:`port`, or None while nothing answers.
fn get_json(port: u16, path: &str) -> Option<serde_json::Value> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    let body = resp.split_once("\r\n\r\n")?.1;
    serde_json::from_str(body).ok()
}

/// The `__meta_kubernetes_*` labels Kubernetes pod discovery gives the DaemonSet's pod on
/// node `node`, with `labels` as its pod labels and `port_name` as its port's name.
fn pod_meta(
    ds: &Yaml,
    node: &str,
    labels: &[(String, String)],
    port_name: &str,
) -> Vec<(String, String)> {
    let c = &ds["spec"]["template"]["spec"]["containers"][0];
    let port = &c["ports"][0];
    let kv = |k: &str, v: &str| (format!("__meta_kubernetes_{k}"), v.to_string());
    let port_no = port["containerPort"].as_i64().expect("containerPort");
    let mut meta = vec![
        kv(
            "namespace",
            str_of(&ds["metadata"]["namespace"], "namespace"),
        ),
        kv("pod_name", "rocetap-x7k2p"),
        kv("pod_node_name", node),
        kv("pod_container_name", str_of(&c["name"], "container name")),
        kv("pod_container_port_name", port_name),
        kv("pod_container_port_number", &port_no.to_string()),
    ];
    for (k, v) in labels {
        let sanitized: String = k
            .chars()
            .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
            .collect();
        meta.push((
            format!("__meta_kubernetes_pod_label_{sanitized}"),
            v.clone(),
        ));
    }
    meta
}

fn template_labels(ds: &Yaml) -> Vec<(String, String)> {
    ds["spec"]["template"]["metadata"]["labels"]
        .as_hash()
        .expect("pod template labels")
        .iter()
        .map(|(k, v)| {
            (
                str_of(k, "label").to_string(),
                str_of(v, "label").to_string(),
            )
        })
        .collect()
}

/// The static example's addresses become loopback ports nothing listens on: a test never
/// sends a packet beyond this machine.
fn static_targets_on_loopback(scrape: &mut Yaml) {
    let jobs = scrape["scrape_configs"].as_vec().cloned().expect("jobs");
    let mut port = 1;
    let mut out = Vec::new();
    for mut job in jobs {
        if let Some(Yaml::Array(statics)) = job
            .as_mut_hash()
            .and_then(|h| h.get_mut(&key("static_configs")))
        {
            for s in statics {
                let addr = format!("127.0.0.1:{port}");
                port += 1;
                s.as_mut_hash()
                    .unwrap()
                    .insert(key("targets"), Yaml::Array(vec![key(&addr)]));
            }
        }
        out.push(job);
    }
    scrape
        .as_mut_hash()
        .unwrap()
        .insert(key("scrape_configs"), Yaml::Array(out));
}

/// A real Prometheus applies scrape.yml's relabelling to what Kubernetes would discover:
/// the DaemonSet's pod is kept as job="rocetap" with its node and without pod labels; a
/// pod of another application and another port of the agent's pod are dropped; the static
/// example's targets get job="rocetap" and their node; all 11 alerting rules load.
#[test]
fn prometheus_keeps_the_agent_pods_and_names_their_node() {
    if !have("prometheus") {
        skip("prometheus is not installed (Debian package prometheus)");
        return;
    }
    let ds = &yaml("kubernetes/daemonset.yaml")[2];
    let labels = template_labels(ds);
    let mut other = labels.clone();
    for (k, v) in &mut other {
        if k == "app.kubernetes.io/name" {
            *v = "node-exporter".into();
        }
    }
    let targets = [
        ("127.0.0.1:19470", pod_meta(ds, "gpu-a", &labels, "metrics")),
        ("127.0.0.1:19471", pod_meta(ds, "gpu-a", &other, "metrics")),
        ("127.0.0.1:19472", pod_meta(ds, "gpu-a", &labels, "debug")),
    ];
    let targets: Vec<(String, Vec<(&str, &str)>)> = targets
        .iter()
        .map(|(a, m)| {
            (
                a.to_string(),
                m.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
            )
        })
        .collect();
    let mut scrape = yaml("prometheus/scrape.yml")[0].clone();
    static_targets_on_loopback(&mut scrape);
    let scrape = without_kubernetes_sd(&scrape, &targets);
    let dir = TempDir::new("deploy-prometheus");
    let cfg = prometheus_config(&dir, &scrape);
    let port = free_port();
    let server = Command::new("prometheus")
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--log.level=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start prometheus");
    let mut server = Killed(server);
    let deadline = Instant::now() + Duration::from_secs(60);
    let targets = loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            let mut err = String::new();
            server
                .0
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("prometheus exited ({status}): {err}");
        }
        let t = get_json(port, "/api/v1/targets").unwrap_or_default();
        let active = t["data"]["activeTargets"].as_array().map_or(0, Vec::len);
        let dropped = t["data"]["droppedTargets"].as_array().map_or(0, Vec::len);
        if active + dropped == 5 {
            break t;
        }
        assert!(
            Instant::now() < deadline,
            "prometheus has not set up its targets: {t}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    let mut active: Vec<String> = targets["data"]["activeTargets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["labels"].to_string())
        .collect();
    active.sort();
    assert_eq!(
        active,
        [
            r#"{"instance":"127.0.0.1:1","job":"rocetap","node":"gpu-node-01"}"#,
            r#"{"instance":"127.0.0.1:19470","job":"rocetap","node":"gpu-a"}"#,
            r#"{"instance":"127.0.0.1:2","job":"rocetap","node":"gpu-node-02"}"#,
        ]
    );
    let mut dropped: Vec<String> = targets["data"]["droppedTargets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["discoveredLabels"]["__address__"].to_string())
        .collect();
    dropped.sort();
    assert_eq!(dropped, [r#""127.0.0.1:19471""#, r#""127.0.0.1:19472""#]);
    let rules = get_json(port, "/api/v1/rules?type=alert").expect("/api/v1/rules");
    let loaded: usize = rules["data"]["groups"]
        .as_array()
        .expect("rule groups")
        .iter()
        .map(|g| g["rules"].as_array().map_or(0, Vec::len))
        .sum();
    let expected = alerts(&yaml("prometheus/rocetap-rules.yml")[0]).len();
    assert_eq!(loaded, expected, "{rules}");
}

// ---------------------------------------------------------------- the manifests' schemas

fn have_validator() -> bool {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import kubernetes_validate, jsonschema, cloudcoil.models.prometheus_operator",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip("python3 with kubernetes-validate, jsonschema and cloudcoil-models-prometheus-operator is needed (pip; .ci/run pins them)");
    }
    ok
}

fn validate(files: &[PathBuf]) -> Output {
    run(Command::new("python3")
        .arg(deploy("validate.py"))
        .args(files))
}

/// deploy/README.md's command that wraps the rules in a PrometheusRule, writing to `out`
/// instead of `kubectl apply`.
fn prometheus_rule_from_readme(out: &Path) {
    let readme = read("README.md");
    let line = readme
        .lines()
        .find(|l| l.starts_with("{ printf 'apiVersion: monitoring.coreos.com/v1"))
        .expect("README.md's PrometheusRule command");
    let cmd = line
        .strip_suffix(" | kubectl apply -f -")
        .expect("the command ends in kubectl apply");
    let o = run(Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} > '{}'", out.display()))
        .current_dir(env!("CARGO_MANIFEST_DIR")));
    assert!(o.status.success(), "{cmd}: {}", text(&o));
}

#[test]
fn manifests_pass_strict_schema_validation() {
    if !have_validator() {
        return;
    }
    let dir = TempDir::new("deploy-valid");
    let rule = dir.path("prometheusrule.yaml");
    prometheus_rule_from_readme(&rule);
    let o = validate(&[
        deploy("kubernetes/daemonset.yaml"),
        deploy("kubernetes/podmonitor.yaml"),
        rule,
        deploy("kubernetes/podmonitor-tls.yaml"),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .collect::<Vec<_>>(),
        [
            "ok Namespace/rocetap",
            "ok ServiceAccount/rocetap",
            "ok DaemonSet/rocetap",
            "ok PodMonitor/rocetap",
            "ok PrometheusRule/rocetap",
            "ok PodMonitor/rocetap",
        ]
    );
}

/// Broken copies of the manifests must fail, each with the place of its damage: unknown
/// fields (strictness), wrong types and patterns, a missing required field, and a kind no
/// schema is known for (which must not pass as valid). Unreadable YAML is exit 2.
#[test]
fn broken_manifests_fail_validation() {
    if !have_validator() {
        return;
    }
    let cases: [(&str, &str, &str, &str); 8] = [
        ("kubernetes/daemonset.yaml", "hostNetwork: true", "hostNetwrk: true", "DaemonSet/rocetap: spec.template.spec: Additional properties are not allowed ('hostNetwrk'"),
        ("kubernetes/daemonset.yaml", "containerPort: 9470", "containerPort: \"9470\"", "spec.template.spec.containers.0.ports.0.containerPort: '9470' is not of type 'integer'"),
        ("kubernetes/daemonset.yaml", "kind: ServiceAccount", "kind: ServiceAcount", "ServiceAcount/rocetap: (top): Couldn't find schema"),
        ("kubernetes/daemonset.yaml", "  selector:\n    matchLabels:\n      app.kubernetes.io/name: rocetap\n  updateStrategy", "  updateStrategy", "DaemonSet/rocetap: spec: 'selector' is a required property"),
        ("kubernetes/podmonitor.yaml", "podMetricsEndpoints:", "podMetricEndpoints:", "PodMonitor/rocetap: spec: Additional properties are not allowed ('podMetricEndpoints'"),
        ("kubernetes/podmonitor.yaml", "interval: 15s", "interval: 15 seconds", "spec.podMetricsEndpoints.0.interval: '15 seconds' does not match"),
        ("kubernetes/podmonitor.yaml", "action: labeldrop", "action: labeldrp", "spec.podMetricsEndpoints.0.relabelings.1.action: 'labeldrp' is not one of"),
        ("kubernetes/podmonitor.yaml", "honorLabels: true", "honourLabels: true", "('honourLabels' was unexpected)"),
    ];
    let dir = TempDir::new("deploy-broken");
    let mut files = Vec::new();
    for (i, (file, from, to, _)) in cases.iter().enumerate() {
        let good = read(file);
        assert!(good.contains(from), "deploy/{file} no longer has {from:?}");
        let path = dir.path(&format!("broken-{i}.yaml"));
        fs::write(&path, good.replacen(from, to, 1)).unwrap();
        files.push(path);
    }
    let o = validate(&files);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for (i, (_, _, _, expected)) in cases.iter().enumerate() {
        let name = format!("broken-{i}.yaml");
        assert!(
            out.lines()
                .any(|l| l.starts_with("error ") && l.contains(&name) && l.contains(expected)),
            "case {i}: no error {expected:?} for {name} in:\n{out}"
        );
    }
    fs::write(dir.path("bad.yaml"), "kind: [\n").unwrap();
    let o = validate(&[dir.path("bad.yaml")]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("bad.yaml"), "{}", text(&o));
}

// ---------------------------------------------------------------- the manifests agree

/// The value after `flag` in the agent's arguments.
fn arg_after<'a>(args: &'a [Yaml], flag: &str) -> Vec<&'a str> {
    args.windows(2)
        .filter(|w| w[0].as_str() == Some(flag))
        .map(|w| str_of(&w[1], flag))
        .collect()
}

fn labels_of(y: &Yaml) -> Vec<(String, String)> {
    y.as_hash()
        .expect("labels")
        .iter()
        .map(|(k, v)| {
            (
                str_of(k, "label").to_string(),
                str_of(v, "label").to_string(),
            )
        })
        .collect()
}

/// The DaemonSet runs the agent with the vocabulary the agent implements, and its pieces
/// refer to each other: the selector selects the pod template, the listen port is the
/// container port the probes use, the dump directory is a writable hostPath volume, the
/// node name comes from the downward API.
#[test]
fn daemonset_runs_the_agent_as_documented() {
    let docs = yaml("kubernetes/daemonset.yaml");
    let kinds: Vec<&str> = docs.iter().map(|d| str_of(&d["kind"], "kind")).collect();
    assert_eq!(kinds, ["Namespace", "ServiceAccount", "DaemonSet"]);
    let (ns, ds) = (str_of(&docs[0]["metadata"]["name"], "namespace"), &docs[2]);
    assert_eq!(ds["metadata"]["namespace"].as_str(), Some(ns));
    let pod = &ds["spec"]["template"];
    let labels = labels_of(&pod["metadata"]["labels"]);
    for l in labels_of(&ds["spec"]["selector"]["matchLabels"]) {
        assert!(
            labels.contains(&l),
            "the DaemonSet's selector misses its pods: {l:?}"
        );
    }
    let spec = &pod["spec"];
    assert_eq!(
        spec["serviceAccountName"].as_str(),
        docs[1]["metadata"]["name"].as_str()
    );
    for k in ["hostNetwork", "hostPID"] {
        assert_eq!(spec[k].as_bool(), Some(true), "{k}");
    }
    let c = &spec["containers"][0];
    let args = list(&c["args"], "args");
    assert_eq!(args[0].as_str(), Some("agent"));
    let port = &c["ports"][0];
    let (port_name, port_no) = (
        str_of(&port["name"], "port name"),
        port["containerPort"].as_i64(),
    );
    assert_eq!(port_name, "metrics");
    // the node's own address from the downward API, not 0.0.0.0
    assert_eq!(
        arg_after(args, "--listen"),
        [format!("$(NODE_IP):{}", port_no.unwrap())]
    );
    assert_eq!(arg_after(args, "--node-name"), ["$(NODE_NAME)"]);
    let env = list(&c["env"], "env");
    assert!(env.iter().any(|e| e["name"].as_str() == Some("NODE_NAME")
        && e["valueFrom"]["fieldRef"]["fieldPath"].as_str() == Some("spec.nodeName")));
    assert!(env.iter().any(|e| e["name"].as_str() == Some("NODE_IP")
        && e["valueFrom"]["fieldRef"]["fieldPath"].as_str() == Some("status.hostIP")));
    assert_eq!(
        arg_after(args, "--dump-on"),
        ["nak_psn_seq > 10", "arp_cross_subnet_unanswered > 0"]
    );
    let dump_dir = arg_after(args, "--dump-dir")[0];
    let mounts = list(&c["volumeMounts"], "volumeMounts");
    let dump_mount = mounts
        .iter()
        .find(|m| m["mountPath"].as_str() == Some(dump_dir))
        .expect("the dump directory is a volume");
    assert!(
        dump_mount["readOnly"].as_bool() != Some(true),
        "the dump directory is read-only"
    );
    let vol = list(&spec["volumes"], "volumes")
        .iter()
        .find(|v| v["name"] == dump_mount["name"])
        .expect("the dump volume");
    assert_eq!(
        vol["hostPath"]["path"].as_str(),
        Some("/var/lib/rocetap/dumps")
    );
    // Liveness: the process answers; readiness: /healthz (503 while a source is down).
    for (probe, path) in [
        ("livenessProbe", "/metrics"),
        ("readinessProbe", "/healthz"),
    ] {
        assert_eq!(c[probe]["httpGet"]["path"].as_str(), Some(path), "{probe}");
        assert_eq!(
            c[probe]["httpGet"]["port"].as_str(),
            Some(port_name),
            "{probe}"
        );
    }
    // The agent's memory budget fits the container's limit with a quarter of headroom.
    let mi = |v: &Yaml| -> u64 {
        let t = v.as_str().expect("a quantity");
        t.strip_suffix("Mi").expect("in Mi").parse::<u64>().unwrap() << 20
    };
    let limit = mi(&c["resources"]["limits"]["memory"]);
    let budget = arg_after(args, "--memory-limit")
        .first()
        .map_or(rocetap::agent::budget::DEFAULT_LIMIT, |b| {
            rocetap::agent::file::parse_bytes(b).unwrap()
        });
    assert!(
        budget <= limit / 4 * 3 && budget >= mi(&c["resources"]["requests"]["memory"]),
        "--memory-limit {budget} against the container's {limit}"
    );
    let sc = &c["securityContext"];
    assert_eq!(sc["privileged"].as_bool(), Some(false));
    assert_eq!(sc["readOnlyRootFilesystem"].as_bool(), Some(true));
    let caps = |k: &str| -> Vec<&str> {
        list(&sc["capabilities"][k], k)
            .iter()
            .map(|c| str_of(c, k))
            .collect()
    };
    assert_eq!(caps("drop"), ["ALL"]);
    assert_eq!(
        caps("add"),
        ["NET_RAW", "SYS_ADMIN", "IPC_LOCK", "SYS_PTRACE"]
    );
}

/// The PodMonitor and the plain scrape config find the DaemonSet's pods and their port, and
/// name the job the rules expect.
#[test]
fn podmonitor_and_scrape_config_find_the_agent() {
    let docs = yaml("kubernetes/daemonset.yaml");
    let ns = str_of(&docs[2]["metadata"]["namespace"], "namespace");
    let labels = labels_of(&docs[2]["spec"]["template"]["metadata"]["labels"]);
    let port_name = str_of(
        &docs[2]["spec"]["template"]["spec"]["containers"][0]["ports"][0]["name"],
        "port name",
    );
    let pm = &yaml("kubernetes/podmonitor.yaml")[0];
    for l in labels_of(&pm["spec"]["selector"]["matchLabels"]) {
        assert!(
            labels.contains(&l),
            "the PodMonitor's selector misses the agent's pods: {l:?}"
        );
    }
    let names = list(&pm["spec"]["namespaceSelector"]["matchNames"], "matchNames");
    assert!(names.iter().any(|n| n.as_str() == Some(ns)));
    let job_label = str_of(&pm["spec"]["jobLabel"], "jobLabel");
    let job = labels
        .iter()
        .find(|(k, _)| k == job_label)
        .map(|(_, v)| v.as_str());
    assert_eq!(job, Some("rocetap"), "the rules expect job=\"rocetap\"");
    let ep = &pm["spec"]["podMetricsEndpoints"][0];
    assert_eq!(ep["port"].as_str(), Some(port_name));
    assert_eq!(ep["path"].as_str(), Some("/metrics"));
    assert_eq!(ep["honorLabels"].as_bool(), Some(true));

    // The plain scrape config's Kubernetes job.
    let scrape = &yaml("prometheus/scrape.yml")[0];
    let k8s = list(&scrape["scrape_configs"], "scrape_configs")
        .iter()
        .find(|j| !j["kubernetes_sd_configs"].is_badvalue())
        .expect("a job with Kubernetes discovery");
    assert_eq!(k8s["job_name"].as_str(), Some("rocetap"));
    let sd = &k8s["kubernetes_sd_configs"][0];
    assert_eq!(sd["role"].as_str(), Some("pod"));
    assert!(list(&sd["namespaces"]["names"], "namespaces")
        .iter()
        .any(|n| n.as_str() == Some(ns)));
}

// ---------------------------------------------------------------- metric names

/// Every `rocetap_...` name in `text`; a name written as a prefix (`rocetap_flow_*`) keeps
/// its `*`.
fn metric_names(text: &str) -> Vec<String> {
    let word = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_';
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(at) = text[i..].find("rocetap_").map(|p| p + i) {
        let mut end = at + "rocetap_".len();
        while end < bytes.len() && word(bytes[end]) {
            end += 1;
        }
        let starts_word =
            at == 0 || !(word(bytes[at - 1]) || bytes[at - 1].is_ascii_alphanumeric());
        if starts_word {
            let star = bytes.get(end) == Some(&b'*');
            out.push(format!("{}{}", &text[at..end], if star { "*" } else { "" }));
        }
        i = end;
    }
    out
}

#[test]
fn metric_names_are_found_in_text() {
    let found = metric_names(
        "rate(rocetap_naks_total{code=\"x\"}[5m]) rocetap_flow_*{node} /var/lib/rocetap/dumps \
         rocetap-rules.yml xrocetap_no rocetap_up",
    );
    assert_eq!(
        found,
        ["rocetap_naks_total", "rocetap_flow_*", "rocetap_up"]
    );
}

/// The rules, their tests and the deploy docs use only names the agent exports.
#[test]
fn every_metric_the_deploy_files_use_is_exported() {
    let listed: Vec<String> = read("metrics.txt").lines().map(str::to_string).collect();
    let set: BTreeSet<&str> = listed.iter().map(String::as_str).collect();
    assert_eq!(set.len(), listed.len(), "deploy/metrics.txt has duplicates");
    for n in &listed {
        assert_eq!(
            metric_names(n),
            std::slice::from_ref(n),
            "not a metric name: {n:?}"
        );
    }
    let files = [
        "prometheus/rocetap-rules.yml",
        "prometheus/rocetap-rules.test.yml",
        "prometheus/scrape.yml",
        "kubernetes/daemonset.yaml",
        "kubernetes/podmonitor.yaml",
        "README.md",
    ];
    let mut used = 0;
    for f in files {
        for name in metric_names(&read(f)) {
            used += 1;
            let known = match name.strip_suffix('*') {
                Some(prefix) => listed.iter().any(|n| n.starts_with(prefix)),
                None => set.contains(name.as_str()),
            };
            assert!(
                known,
                "deploy/{f} uses {name}, which is not in deploy/metrics.txt"
            );
        }
    }
    assert!(
        used > 30,
        "only {used} metric names found: the scan is broken"
    );
}

// ---------------------------------------------------------------- the Grafana dashboard

/// The fleet dashboard passes validate.py's structural check; broken copies of it fail,
/// each with its own error (so the check is not vacuous).
#[test]
fn fleet_dashboard_passes_and_broken_copies_fail() {
    if !have_validator() {
        return;
    }
    let path = deploy("grafana/rocetap-fleet.json");
    let o = validate(std::slice::from_ref(&path));
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("ok dashboard/rocetap-fleet"),
        "{}",
        text(&o)
    );
    let good: serde_json::Value =
        serde_json::from_str(&read("grafana/rocetap-fleet.json")).unwrap();
    let dir = TempDir::new("deploy-grafana");
    type Break = fn(&mut serde_json::Value);
    let cases: [(&str, Break, &str); 6] = [
        (
            "no-heatmap",
            |d| d["panels"][0]["type"] = "table".into(),
            "no heatmap",
        ),
        (
            "overlap",
            |d| d["panels"][1]["gridPos"]["y"] = 5.into(),
            "overlaps",
        ),
        (
            "wide",
            |d| d["panels"][2]["gridPos"]["w"] = 20.into(),
            "24-column",
        ),
        (
            "unknown-record",
            |d| d["panels"][3]["targets"][0]["expr"] = "rocetap:nope:rate5m".into(),
            "not recorded",
        ),
        (
            "unknown-metric",
            |d| d["panels"][5]["targets"][0]["expr"] = "rate(rocetap_nope_total[5m])".into(),
            "not in deploy/metrics.txt",
        ),
        (
            "datasource",
            |d| d["panels"][4]["datasource"]["uid"] = "prom-1".into(),
            "datasource",
        ),
    ];
    for (name, brk, want) in cases {
        let mut d = good.clone();
        brk(&mut d);
        let f = dir.path(&format!("{name}.json"));
        fs::write(&f, serde_json::to_string_pretty(&d).unwrap()).unwrap();
        let o = validate(&[f]);
        assert_eq!(o.status.code(), Some(1), "{name}: {}", text(&o));
        assert!(text(&o).contains(want), "{name}: {}", text(&o));
    }
}
