//! RDMA `hw_counters` from sysfs, read once a second with per-second deltas.

use super::*;

/// Reads the hw_counters of the RDMA devices behind the live sources.
pub struct HwReader {
    ports: Vec<(String, PathBuf)>,
    last: HashMap<(usize, String), u64>,
    last_at: Option<Instant>,
}

impl HwReader {
    /// The counter directories of `names` (RDMA devices, `dev:port`, or netdevs of an
    /// RDMA device); empty when none is an RDMA device.
    pub fn new(root: &Path, names: &[String]) -> Self {
        let mut ports = Vec::new();
        for n in names {
            let (dev, port) = match rdma::parse_name(root, n) {
                Some(x) => x,
                None => match rdma::list(root).into_iter().find(|d| d.netdevs.contains(n)) {
                    Some(d) => (d.name, None),
                    None => continue,
                },
            };
            let Some(info) = rdma::device(root, &dev) else {
                continue;
            };
            for p in info.ports {
                if port.is_some_and(|x| x != p.number) {
                    continue;
                }
                let dir = rdma::counters_dir(root, &dev, p.number);
                let label = format!("{dev}/{}", p.number);
                if dir.is_dir() && !ports.iter().any(|(l, _)| *l == label) {
                    ports.push((label, dir));
                }
            }
        }
        HwReader {
            ports,
            last: HashMap::new(),
            last_at: None,
        }
    }

    /// Whether no counter directory was found (nothing to read).
    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    /// Reads every counter of every port now, with its change per second since the previous
    /// call (`None` on the first). A port whose counters cannot be read (a file that is no
    /// regular file, too long or no number: see [`rdma::read_counters`]) shows none.
    pub fn read(&mut self, now: Instant) -> Vec<HwCounter> {
        let secs = self
            .last_at
            .map(|t| now.saturating_duration_since(t).as_secs_f64());
        let mut out = Vec::new();
        for (i, (label, dir)) in self.ports.iter().enumerate() {
            for (name, value) in rdma::read_counters(dir).unwrap_or_default() {
                let prev = self.last.insert((i, name.clone()), value);
                let per_s = match (prev, secs) {
                    (Some(p), Some(s)) if s > 0.0 => Some(value.saturating_sub(p) as f64 / s),
                    _ => None,
                };
                out.push(HwCounter {
                    port: label.clone(),
                    name,
                    value,
                    per_s,
                });
            }
        }
        self.last_at = Some(now);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_that_is_a_fifo_neither_blocks_nor_counts() {
        let root = std::env::temp_dir().join(format!("rocetap-hw-{}", std::process::id()));
        let c = root.join("class/infiniband/mlx5_0/ports/1/hw_counters");
        std::fs::create_dir_all(&c).unwrap();
        std::fs::write(c.join("out_of_sequence"), "7\n").unwrap();
        let mut r = HwReader::new(&root, &["mlx5_0".to_string()]);
        let now = Instant::now();
        assert_eq!(r.read(now).len(), 1);
        nix::unistd::mkfifo(&c.join("packet_seq_err"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(
            r.read(now).is_empty(),
            "a port whose counters cannot be read shows none"
        );
        assert!(now.elapsed() < std::time::Duration::from_secs(2));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
