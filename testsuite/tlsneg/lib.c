volatile long lib_sink;
__attribute__ ((noinline)) void lib_fn (int x) { lib_sink += x; }
