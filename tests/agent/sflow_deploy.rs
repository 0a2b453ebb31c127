//! `deploy/kubernetes/sflow-collector.yaml` (the `rocetap sflow` Deployment, Service and
//! PodMonitor) under the same strict offline validation as the agent's manifests
//! (`deploy/validate.py`), and its arguments accepted by `rocetap sflow`.

use crate::common::{bin, skip};
use std::path::Path;
use std::process::Command;

fn manifest() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/sflow-collector.yaml")
}

#[test]
fn the_collector_manifest_validates() {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import kubernetes_validate, jsonschema, cloudcoil.models.prometheus_operator",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip("python3 with kubernetes-validate, jsonschema and cloudcoil-models-prometheus-operator is needed (pip; .ci/run pins them)");
        return;
    }
    let o = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/validate.py"))
        .arg(manifest())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "ok Deployment/rocetap-sflow",
            "ok Service/rocetap-sflow",
            "ok PodMonitor/rocetap-sflow"
        ]
    );
}

/// The container's arguments parse (a run that fails on them would crash-loop): the
/// same flags with -r of an empty capture instead of listening.
#[test]
fn the_collector_arguments_parse() {
    let text = std::fs::read_to_string(manifest()).unwrap();
    let args: Vec<String> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("args:"))
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("- ") || l.trim_start().starts_with('#'))
        .filter(|l| l.trim_start().starts_with("- "))
        .map(|l| l.trim_start()[2..].trim_matches('"').to_string())
        .collect();
    assert_eq!(args[0], "sflow", "{args:?}");
    let o = Command::new(bin())
        .args(&args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}
