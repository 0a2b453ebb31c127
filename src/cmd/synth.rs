//! `rocetap synth`: the command line handed on as a [`synth::Config`].

use crate::cli::SynthArgs;
use rocetap::error::Failure;
use rocetap::synth;

pub fn run(a: SynthArgs) -> Result<i32, Failure> {
    Ok(synth::run(synth::Config {
        scenario: a.scenario,
        output: a.output,
        seed: a.seed,
        packets: a.packets,
        snaplen: a.snaplen,
        pcapng: a.pcapng,
        qps: a.qps,
        peers: a.peers,
        loss: a.loss,
        msg_size: a.msg_size,
        force: a.force,
        list: a.list,
    })?)
}
