/* Compiled with -c -g -O0 (always_inline still inlines, and keeps both levels in DWARF) -ffunction-sections for the ITT test: an object like the one
 * LLVM hands to __itt_module_load_with_sections, with inlines two levels deep. */
static inline __attribute__((always_inline)) int leaf(int x) {
    return x * 3 + 1;
}
static inline __attribute__((always_inline)) int mid(int x) {
    return leaf(x) ^ leaf(x + 7);
}
int top(int x) {
    int s = 0;
    for (int i = 0; i < x; i++)
        s += mid(i);
    return s;
}
int other(int y) {
    return y * y + 1;
}
