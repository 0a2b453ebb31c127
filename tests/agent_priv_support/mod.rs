//! What `tests/agent/agent_priv.rs` reads of the running agent: every thread's capability sets,
//! the agent started under a wrapper (umask, setpriv), a namespace a root process holds,
//! and what a dump's frames keep.

#![allow(dead_code)]

use crate::agent_support::*;
use crate::common::bin;
use dissectors::StopKind;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::process::{Command, Stdio};

pub const NET_RAW: u64 = 1 << 13;
pub const IPC_LOCK: u64 = 1 << 14;
pub const SYS_PTRACE: u64 = 1 << 19;
pub const SYS_ADMIN: u64 = 1 << 21;

/// The agent started by `sh -c "{shell} exec {wrap} rocetap agent ARGS"` (a shell
/// command such as `umask 000;`, a wrapper such as `setpriv …`), its stderr into `log`.
pub fn start_wrapped(shell: &str, wrap: &str, args: &[&str], log: &Path) -> Proc {
    let err = std::fs::File::create(log).unwrap();
    Proc(
        Command::new("sh")
            .arg("-c")
            .arg(format!("{shell} exec {wrap} \"$0\" agent \"$@\""))
            .arg(bin())
            .args(args)
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap(),
    )
}

/// Every thread's capability sets and no_new_privs: thread name → field → value.
pub fn threads(pid: u32) -> Vec<(String, BTreeMap<String, u64>)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let Ok(status) = std::fs::read_to_string(t.path().join("status")) else {
            continue; // a thread that just ended
        };
        let mut m = BTreeMap::new();
        for l in status.lines() {
            let Some((k, v)) = l.split_once(':') else {
                continue;
            };
            let v = v.trim();
            if k.starts_with("Cap") {
                m.insert(k.to_string(), u64::from_str_radix(v, 16).unwrap());
            } else if k == "NoNewPrivs" {
                m.insert(k.to_string(), v.parse().unwrap());
            }
        }
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        out.push((
            format!("{} {}", t.file_name().to_string_lossy(), comm.trim()),
            m,
        ));
    }
    out
}

pub fn assert_caps(pid: u32, want: u64) {
    let ts = threads(pid);
    // At least the main thread (which also reads a single source) and the HTTP server's;
    // several sources add a capture thread each, netcheck its own.
    assert!(ts.len() >= 2, "the agent's threads: {ts:?}");
    for (name, m) in &ts {
        for (k, v) in [
            ("CapEff", want),
            ("CapPrm", want),
            ("CapBnd", want),
            ("CapInh", 0),
            ("CapAmb", 0),
            ("NoNewPrivs", 1),
        ] {
            assert_eq!(m.get(k), Some(&v), "thread {name}: {k} in {m:x?}");
        }
    }
}

pub fn metrics(port: u16) -> String {
    get(port, "/metrics").map(|(_, b)| b).unwrap_or_default()
}

pub fn wait_metric(port: u16, series: &str, want: f64, log: &Path) {
    wait_for(&format!("{series} = {want}"), 60, || {
        let v = metric(&metrics(port), series);
        if v != Some(want) {
            eprintln!(
                "{series}: {v:?}\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        (v == Some(want)).then_some(())
    });
}

/// A network namespace that only a root process with every capability holds.
pub fn held_namespace() -> Proc {
    Proc(
        Command::new("unshare")
            .args(["-n", "sleep", "120"])
            .spawn()
            .unwrap(),
    )
}

/// No payload byte past the transport headers, rkeys 0, none of the sample's VAs.
pub fn check_headers_only(dump: &Path, sample: &Path) {
    let cfg = dissectors::Config {
        roce_port: 4791,
        check_icrc: true,
    };
    let vas = |p: &Path, check: bool| {
        let mut vas = Vec::new();
        let mut frames = 0;
        rocetap::capture::input::for_each_frame_of(&[p.to_path_buf()], true, |f| {
            let d = dissectors::decode(f.link, f.data, f.orig_len, &cfg);
            if let Some(r) = d.roce {
                let good = matches!(d.stop.kind, StopKind::Complete | StopKind::Truncated);
                if check && good && r.mad.is_none() && r.payload_len > 0 {
                    assert!(
                        f.data.len() <= r.payload_offset as usize,
                        "{} bytes kept of a frame whose payload starts at {}",
                        f.data.len(),
                        r.payload_offset
                    );
                    assert!(f.orig_len > f.data.len() as u32);
                }
                if let Some(x) = r.reth {
                    if check {
                        assert_eq!(x.rkey, 0, "rkey masked");
                    }
                    vas.push(x.va);
                }
            }
            frames += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
        assert!(frames > 0);
        vas
    };
    let seen = vas(dump, true);
    let orig = vas(sample, false);
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|v| !orig.contains(v)),
        "a sample VA is in the dump"
    );
}
