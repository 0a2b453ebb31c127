//! What the agent's analysis loop gets from outside it: the netcheck pass over every
//! namespace (its own thread, logging findings as they appear and clear) and the kernel's
//! QP tables of `--qp-table`.

use super::log::Log;
use super::netns;
use super::state::{NsState, Published};
use super::Config;
use super::Error;
use crate::analysis::Report;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// The netcheck pass, every `every`, until `stop`; logs findings appearing and clearing.
pub(super) fn netcheck_loop(
    cfg: &Config,
    every: Duration,
    shared: &Mutex<Published>,
    stop: &AtomicBool,
    analyses: &SyncSender<SyncSender<Vec<Report>>>,
    log: Log,
) {
    let mut before: Option<Vec<NsState>> = None;
    loop {
        // The sources' analyses as they stand, for the joined QoS checks.
        let (tx, rx) = sync_channel(1);
        let captures = match analyses.try_send(tx) {
            Ok(()) => rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        let now = netns::check_all(
            &cfg.roots,
            &cfg.sysfs_root,
            &cfg.netcheck_only,
            cfg.qos_from.as_deref(),
            &captures,
        );
        drop(captures);
        log_changes(before.as_deref().unwrap_or(&[]), &now, log);
        {
            let mut p = shared
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            p.netcheck.runs += 1;
            p.netcheck.last_run = Some(SystemTime::now());
            p.netcheck.namespaces = now.clone();
        }
        before = Some(now);
        let until = Instant::now() + every;
        while Instant::now() < until {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn ns_fields(ns: &NsState, check: &str, sev: &str, title: &str) -> Vec<(&'static str, String)> {
    let mut v = vec![("netns", ns.netns.clone())];
    if let Some(p) = &ns.pod {
        v.push(("pod", p.name.clone()));
        v.push(("pod_namespace", p.namespace.clone()));
    }
    v.push(("check", check.to_string()));
    v.push(("severity", sev.to_string()));
    v.push(("title", title.to_string()));
    v
}

fn log_changes(before: &[NsState], now: &[NsState], log: Log) {
    let key = |ns: &NsState| ns.netns.clone();
    for ns in now {
        let old = before.iter().find(|b| key(b) == key(ns));
        if let Some(e) = &ns.error {
            if old.and_then(|o| o.error.as_ref()) != Some(e) {
                log.event(
                    "netcheck_error",
                    &[("netns", ns.netns.clone()), ("error", e.clone())],
                );
            }
        }
        for f in &ns.findings {
            if !old.is_some_and(|o| o.findings.contains(f)) {
                log.event("finding", &ns_fields(ns, &f.check, &f.severity, &f.title));
            }
        }
    }
    for ns in before {
        let new = now.iter().find(|n| key(n) == key(ns));
        for f in &ns.findings {
            if !new.is_some_and(|n| n.findings.contains(f)) {
                log.event(
                    "finding_cleared",
                    &ns_fields(ns, &f.check, &f.severity, &f.title),
                );
            }
        }
    }
}

/// The QP tables of `--qp-table`: files read once (at start, where a bad one is an
/// error), `live` read again each time it is used.
pub(super) struct QpTables {
    files: Vec<crate::qptable::QpEntry>,
    live: bool,
    any: bool,
}

impl QpTables {
    pub(super) fn load(sources: &[String]) -> Result<Self, Error> {
        let mut t = QpTables {
            files: Vec::new(),
            live: false,
            any: !sources.is_empty(),
        };
        for s in sources {
            if s == "live" {
                crate::qptable::netlink::read().map_err(Error::QpTableLive)?;
                t.live = true;
            } else {
                t.files
                    .extend(crate::qptable::load_arg(s).map_err(Error::QpTable)?);
            }
        }
        Ok(t)
    }

    /// Every entry as of now (`None` without `--qp-table`); a live table that cannot be
    /// read now counts as empty.
    pub(super) fn now(&self) -> Option<Vec<crate::qptable::QpEntry>> {
        if !self.any {
            return None;
        }
        let mut all = self.files.clone();
        if self.live {
            all.extend(crate::qptable::netlink::read().unwrap_or_default());
        }
        Some(all)
    }
}
