//! What the agent's HTTP endpoints share with the rest of the agent: the `/healthz`
//! verdict and the `/report` request. The server itself (hyper, limits, TLS, basic auth,
//! the routes) is in `super::web`.

use super::state::Published;
use std::sync::mpsc::SyncSender;
use std::time::Duration;

/// A `/report` request to the analysis loop: the reply goes back on the channel inside.
pub type ReportRequest = SyncSender<Vec<u8>>;

/// The loop's tick may be this late before `/healthz` says the analysis is stuck.
const STALL: Duration = Duration::from_secs(10);

/// Why the agent is unhealthy, or `None`.
pub fn health(p: &Published) -> Option<String> {
    if let Some(why) = &p.unhealthy {
        return Some(why.clone());
    }
    if p.tick.elapsed() > STALL {
        return Some(format!(
            "the analysis loop has not published for {} s",
            p.tick.elapsed().as_secs()
        ));
    }
    let failed: Vec<String> = p
        .sources
        .iter()
        .filter_map(|s| s.error.as_ref().map(|e| format!("{}: {e}", s.name)))
        .collect();
    (!failed.is_empty()).then(|| format!("capture stopped: {}", failed.join("; ")))
}
