//! The known keys of the CNI plugins this lint reasons about (a conflist, sriov, sbr,
//! tuning, whereabouts and its ranges), and the nearest known key to a misspelt one.

const COMMON: &[&str] = &[
    "type",
    "name",
    "cniVersion",
    "capabilities",
    "runtimeConfig",
    "args",
    "prevResult",
    "dns",
    "logLevel",
    "logFile",
    "log_level",
    "log_file",
];

/// Keys each plugin understands (besides `COMMON`); None: a plugin this lint does not know.
pub fn known_keys(ty: &str) -> Option<&'static [&'static str]> {
    Some(match ty {
        "sriov" => &[
            "deviceID",
            "pciBusID",
            "vlan",
            "vlanQoS",
            "vlanProto",
            "mac",
            "spoofchk",
            "trust",
            "link_state",
            "min_tx_rate",
            "max_tx_rate",
            "ipam",
            "mtu",
            "metaPlugins",
        ],
        "sbr" => &["table", "gateways", "addSourceHints"],
        "tuning" => &[
            "mtu", "mac", "promisc", "allmulti", "txQLen", "sysctl", "dataDir",
        ],
        _ => return None,
    })
}

/// The top-level keys of a plugin list (`plugins` configuration), besides the common ones.
pub const CONFLIST_KEYS: &[&str] = &[
    "cniVersion",
    "cniVersions",
    "name",
    "plugins",
    "disableCheck",
    "disableGC",
];

/// The keys the whereabouts IPAM plugin understands at the top of `ipam`.
pub const WHEREABOUTS_KEYS: &[&str] = &[
    "type",
    "range",
    "range_start",
    "range_end",
    "exclude",
    "gateway",
    "network_name",
    "ipRanges",
    "routes",
    "dns",
    "log_file",
    "log_level",
    "enable_overlapping_ranges",
    "sleep_for_race",
    "configuration_path",
    "kubernetes",
    "datastore",
    "etcd_host",
    "etcd_username",
    "etcd_password",
    "etcd_key_file",
    "etcd_cert_file",
    "etcd_ca_cert_file",
    "leader_lease_duration",
    "leader_renew_deadline",
    "leader_retry_period",
    "reconciler_cron_expression",
    "node_slice_size",
    "overlapping_ranges",
];

/// The keys of one entry of whereabouts' `ipRanges`.
pub const IP_RANGE_KEYS: &[&str] = &["range", "range_start", "range_end", "exclude", "gateway"];

/// True when `k` is one of `keys` or a key every plugin takes (`type`, `name`, `cniVersion`,
/// `capabilities`, ...).
pub fn is_known(keys: &[&str], k: &str) -> bool {
    keys.contains(&k) || COMMON.contains(&k)
}

/// A close known key (edit distance <= 2), for "did you mean".
pub fn suggest(keys: &[&str], k: &str) -> Option<String> {
    fn dist(a: &str, b: &str) -> usize {
        let a: Vec<char> = a.to_lowercase().chars().collect();
        let b: Vec<char> = b.to_lowercase().chars().collect();
        let mut prev: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.iter().enumerate() {
            let mut cur = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                let c = if ca == cb { prev[j] } else { prev[j] + 1 };
                cur.push(c.min(prev[j + 1] + 1).min(cur[j] + 1));
            }
            prev = cur;
        }
        prev[b.len()]
    }
    keys.iter()
        .chain(COMMON.iter())
        .map(|c| (dist(c, k), *c))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, c)| c.to_string())
}
