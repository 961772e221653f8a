/* The floor of any LD_PRELOAD: a library that does nothing, linked as libophook.so's stub is (two
   segments, no RELRO). The dormant rows of scripts/bench.sh show what preloading it costs
   /bin/true and sh -c : beside what the stub costs them. */
void ophook_bench_empty_preload(void) {}
