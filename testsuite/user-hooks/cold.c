/* Cold functions: GCC does not grow them by inlining the exit hook.  */
__attribute__ ((cold, noinline)) int rare (int x) { return x * 7; }
__attribute__ ((cold, noinline)) int rare2 (int x) { return x * 9; }
int main (int argc, char **argv) { (void) argv; return rare (argc) + rare2 (argc) == 1; }
