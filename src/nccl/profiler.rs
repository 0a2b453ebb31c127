//! QPNs from NCCL's example profiler plugin (`plugins/profiler/example`, NCCL 2.26 on):
//! its trace files (`NCCL_PROFILE_DUMP_FILE_<commHash>_<rank>.json`, Chrome trace events)
//! hold one `{"name": "Qp", "cat": "NET_IB", "ph": "b", ..., "pid": %d, ..., "args":
//! {"device": %d, "qp_num": %d, ...}},` line per work request. Given with the logs, each
//! QPN goes to the process of that pid (when one host's process alone has it), where the
//! join reads it as a QP line's.

use super::{Log, Qp};
use crate::config::limits::{NCCL_ITEMS, NCCL_PER_PROC};
use serde_json::Value;

/// One trace event's QP: (pid, device, QPN).
pub fn qp_event(text: &str) -> Option<(u32, u32, u32)> {
    let t = text.trim().trim_end_matches(',');
    if !t.starts_with('{') || !t.contains("\"NET_IB\"") || !t.contains("qp_num") {
        return None;
    }
    let v: Value = serde_json::from_str(t).ok()?;
    if v.get("cat")?.as_str()? != "NET_IB" {
        return None;
    }
    let n = |x: &Value| x.as_u64().and_then(|n| u32::try_from(n).ok());
    let pid = n(v.get("pid")?)?;
    let args = v.get("args")?;
    Some((pid, n(args.get("device")?)?, n(args.get("qp_num")?)?))
}

/// Gives each pending trace QPN to the one process with its pid; the QPNs of a pid
/// several processes (hosts) share are counted, not guessed.
pub fn attach(log: &mut Log) {
    let pending = std::mem::take(&mut log.profiler_qps);
    for (pid, dev, qpn) in pending {
        let mut it = log.procs.iter().enumerate().filter(|(_, p)| p.pid == pid);
        let (Some((i, _)), None) = (it.next(), it.next()) else {
            log.counts.profiler_unattached += 1;
            continue;
        };
        let p = &mut log.procs[i];
        if p.qps.iter().any(|q| q.qpn == qpn) {
            continue;
        }
        if p.qps.len() < NCCL_PER_PROC && log.items < NCCL_ITEMS {
            p.qps.push(Qp {
                dev: Some(dev),
                qpn,
                gid_index: None,
                gid: None,
            });
            log.items += 1;
        } else {
            p.dropped += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_lines() {
        let l = r#"{"name": "Qp", "cat": "NET_IB", "ph": "b", "id": 3, "pid": 4101, "tid": 1, "ts": 12.5, "args": {"device": 1, "qp_num": 261, "opcode": 0, "wr_id": 7, "size": 524288}},"#;
        assert_eq!(qp_event(l), Some((4101, 1, 261)));
        assert_eq!(
            qp_event(
                r#"{"name": "Qp", "cat": "NET_IB", "ph": "e", "id": 3, "pid": 4101, "tid": 1, "ts": 13.0},"#
            ),
            None
        );
        assert_eq!(qp_event(r#"{"cat": "NET_IB", "qp_num": "#), None);
    }
}
