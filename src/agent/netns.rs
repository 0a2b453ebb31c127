//! Every network namespace of the node, each labelled with its pod where the node can
//! tell, and the netcheck pass over them.
//!
//! Namespaces: the agent's own (`host`), the named ones in `/run/netns` (what `ip netns
//! add` and containerd's CNI setup create, `cni-…`), and any other that only a process
//! holds (`/proc/PID/ns/net`, named `pid:PID` after its lowest PID). Two entries are the
//! same namespace when their nsfs inodes are.
//!
//! Pods: from what the kubelet itself put into the pod, read through a process of the
//! namespace — the pod UID in its cgroup path (`…kubepods…pod<UID>…`), the pod name in
//! the `/etc/hostname` the kubelet writes into every container, and the namespace in the
//! service-account mount (`/var/run/secrets/kubernetes.io/serviceaccount/namespace`).
//! Chosen over the kubelet pod-resources API and the CRI because both are gRPC services
//! (a client, a socket mount and a version to track) and the pod-resources API maps pods
//! to devices, not to network namespaces; Multus' device-info files are keyed by device
//! too. The limits are the kubelet's: a pod with `spec.hostname` shows that name, one
//! without a service-account token no namespace; a namespace with no such process is
//! labelled by its netns alone.

use super::state::{NsFinding, NsState, Pod};
use crate::netcheck::netlink::Target;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A namespace to check.
#[derive(Clone, Debug)]
pub struct Namespace {
    /// `host`, the `/run/netns` name, or `pid:PID`.
    pub name: String,
    /// How netcheck enters it.
    pub target: Target,
    /// A process inside it (for the pod label).
    pub pid: Option<u32>,
}

/// Where the node's files are (the real ones, or a fake tree in tests).
#[derive(Clone, Debug)]
pub struct Roots {
    /// `/proc`.
    pub proc: std::path::PathBuf,
    /// `/run/netns`.
    pub netns: std::path::PathBuf,
}

impl Default for Roots {
    fn default() -> Self {
        Roots {
            proc: "/proc".into(),
            netns: "/run/netns".into(),
        }
    }
}

fn ns_id(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// The namespaces of the node, the agent's own first, then the named ones by name, then
/// the process-only ones by PID.
pub fn list(roots: &Roots) -> Vec<Namespace> {
    // Every process's namespace, lowest PID first.
    let mut pids: Vec<u32> = std::fs::read_dir(&roots.proc)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    pids.sort_unstable();
    let mut by_ns: BTreeMap<(u64, u64), u32> = BTreeMap::new();
    for pid in pids {
        if let Some(id) = ns_id(&roots.proc.join(pid.to_string()).join("ns/net")) {
            by_ns.entry(id).or_insert(pid);
        }
    }
    let own = ns_id(&roots.proc.join("self/ns/net"));
    let mut out = vec![Namespace {
        name: "host".into(),
        target: Target::Current,
        pid: None,
    }];
    let mut seen: Vec<(u64, u64)> = own.into_iter().collect();
    let mut named: Vec<String> = std::fs::read_dir(&roots.netns)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    named.sort();
    for n in named {
        let Some(id) = ns_id(&roots.netns.join(&n)) else {
            continue;
        };
        if seen.contains(&id) {
            continue;
        }
        seen.push(id);
        out.push(Namespace {
            target: Target::Netns(n.clone()),
            name: n,
            pid: by_ns.get(&id).copied(),
        });
    }
    for (id, pid) in by_ns {
        if !seen.contains(&id) {
            seen.push(id);
            out.push(Namespace {
                name: format!("pid:{pid}"),
                target: Target::Pid(pid),
                pid: Some(pid),
            });
        }
    }
    out
}

/// The pod UID in a cgroup file's text: `pod<UID>` in a kubepods path, with the systemd
/// driver's `_` turned back into `-`.
pub fn pod_uid(cgroup: &str) -> Option<String> {
    for line in cgroup.lines() {
        let path = line.rsplit(':').next()?;
        if !path.contains("kubepods") {
            continue;
        }
        for part in path.split('/') {
            let Some(i) = part.rfind("pod") else { continue };
            let rest = &part[i + 3..];
            let uid: String = rest
                .chars()
                .take_while(|c| c.is_ascii_hexdigit() || *c == '-' || *c == '_')
                .map(|c| if c == '_' { '-' } else { c })
                .collect();
            if uid.len() >= 32 {
                return Some(uid);
            }
        }
    }
    None
}

/// The pod of process `pid`, when it is in one.
pub fn pod_of(roots: &Roots, pid: u32) -> Option<Pod> {
    let p = roots.proc.join(pid.to_string());
    // bounded reads of regular files only (`sysfile`): the pod chooses what its root holds
    // (a FIFO as etc/hostname must not stop the agent, nor a 1 GiB file fill its memory)
    let uid = pod_uid(&crate::sysfile::value(&p.join("cgroup")).ok()??)?;
    let read = |rel: &str| {
        crate::sysfile::value(&p.join("root").join(rel))
            .ok()
            .flatten()
            .filter(|s| s.len() <= 253)
    };
    Some(Pod {
        name: read("etc/hostname").unwrap_or_else(|| format!("uid:{uid}")),
        namespace: read("var/run/secrets/kubernetes.io/serviceaccount/namespace")
            .unwrap_or_default(),
    })
}

/// Runs netcheck on every namespace (`only`: just these names, when not empty), with the
/// recorded DCB outputs of `qos_from` and joined with the sources' analyses `captures`.
pub fn check_all(
    roots: &Roots,
    sysfs: &Path,
    only: &[String],
    qos_from: Option<&Path>,
    captures: &[crate::analysis::Report],
) -> Vec<NsState> {
    list(roots)
        .into_iter()
        .filter(|n| only.is_empty() || only.contains(&n.name))
        .map(|n| {
            let pod = n.pid.and_then(|p| pod_of(roots, p));
            match crate::netcheck::check_live(&n.target, sysfs, qos_from, captures) {
                Ok(fs) => {
                    let mut findings: Vec<NsFinding> = fs
                        .into_iter()
                        .map(|f| NsFinding {
                            check: f.id.to_string(),
                            severity: f.severity.label().to_ascii_lowercase(),
                            title: f.title,
                        })
                        .collect();
                    findings.sort();
                    NsState {
                        netns: n.name,
                        pod,
                        findings,
                        error: None,
                    }
                }
                Err(e) => NsState {
                    netns: n.name,
                    pod,
                    findings: Vec::new(),
                    error: Some(e.to_string()),
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_uids_from_both_cgroup_drivers() {
        let systemd = "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice/cri-containerd-abc.scope\n";
        assert_eq!(
            pod_uid(systemd).as_deref(),
            Some("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
        );
        let cgroupfs =
            "12:memory:/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/abcdef\n";
        assert_eq!(
            pod_uid(cgroupfs).as_deref(),
            Some("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
        );
        assert_eq!(
            pod_uid("0::/user.slice/user-0.slice/session-1.scope\n"),
            None
        );
        assert_eq!(
            pod_uid("0::/kubepods.slice/kubepods-podshort.slice\n"),
            None
        );
        assert_eq!(pod_uid(""), None);
    }

    #[test]
    fn pods_from_a_proc_tree() {
        let dir = std::env::temp_dir().join(format!("rocetap-pod-{}", std::process::id()));
        let p = dir.join("proc/4242");
        std::fs::create_dir_all(p.join("root/etc")).unwrap();
        std::fs::create_dir_all(p.join("root/var/run/secrets/kubernetes.io/serviceaccount"))
            .unwrap();
        std::fs::write(
            p.join("cgroup"),
            "0::/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/x\n",
        )
        .unwrap();
        std::fs::write(p.join("root/etc/hostname"), "trainer-0\n").unwrap();
        std::fs::write(
            p.join("root/var/run/secrets/kubernetes.io/serviceaccount/namespace"),
            "ml",
        )
        .unwrap();
        let roots = Roots {
            proc: dir.join("proc"),
            netns: dir.join("netns"),
        };
        assert_eq!(
            pod_of(&roots, 4242),
            Some(Pod {
                name: "trainer-0".into(),
                namespace: "ml".into()
            })
        );
        std::fs::remove_file(p.join("root/etc/hostname")).unwrap();
        assert_eq!(
            pod_of(&roots, 4242).unwrap().name,
            "uid:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
        );
        // what the pod put there is read bounded and never waited on: a FIFO, an endless
        // device and a 1 GiB file as its hostname are passed over (the uid stands in)
        let host = p.join("root/etc/hostname");
        let t = std::time::Instant::now();
        nix::unistd::mkfifo(&host, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(pod_of(&roots, 4242).unwrap().name.starts_with("uid:"));
        std::fs::remove_file(&host).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &host).unwrap();
        assert!(pod_of(&roots, 4242).unwrap().name.starts_with("uid:"));
        std::fs::remove_file(&host).unwrap();
        std::fs::File::create(&host)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        assert!(pod_of(&roots, 4242).unwrap().name.starts_with("uid:"));
        assert!(
            t.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(pod_of(&roots, 1), None, "no such process");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_agents_own_namespace_comes_first_and_once() {
        let l = list(&Roots::default());
        assert_eq!(l[0].name, "host");
        assert!(!l[1..].iter().any(|n| n.name == "host"));
    }
}
