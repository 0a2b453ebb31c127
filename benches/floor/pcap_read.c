/* The floor of benches/analyze.sh: a bare libpcap read loop that reads every frame of a
 * capture file and discards it (it touches each frame's last byte so the read is not
 * optimised away). Usage: pcap_read FILE; prints "frames bytes". Built by the script:
 * cc -O2 -o pcap_read pcap_read.c -lpcap */
#include <pcap/pcap.h>
#include <stdio.h>

static unsigned long frames, sum;

static void take(u_char *user, const struct pcap_pkthdr *h, const u_char *data)
{
    (void)user;
    frames++;
    if (h->caplen > 0)
        sum += data[h->caplen - 1];
}

int main(int argc, char **argv)
{
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *p;
    int r;

    if (argc != 2) {
        fprintf(stderr, "usage: pcap_read FILE\n");
        return 2;
    }
    p = pcap_open_offline_with_tstamp_precision(argv[1], PCAP_TSTAMP_PRECISION_NANO, err);
    if (!p) {
        fprintf(stderr, "pcap_read: %s\n", err);
        return 2;
    }
    while ((r = pcap_dispatch(p, -1, take, NULL)) > 0)
        ;
    if (r == -1) {
        fprintf(stderr, "pcap_read: %s\n", pcap_geterr(p));
        return 2;
    }
    printf("%lu %lu\n", frames, sum);
    pcap_close(p);
    return 0;
}
