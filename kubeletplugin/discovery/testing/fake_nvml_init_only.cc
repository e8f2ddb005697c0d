// A libnvidia-ml.so.1 that exports nvmlInit_v2 and nothing else: a library too old (or too broken)
// for ProbeNvml, which must report the first required symbol it lacks.
extern "C" __attribute__((visibility("default"))) int nvmlInit_v2() { return 0; }
