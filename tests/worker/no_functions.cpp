// A library with no TASKWIRE_REGISTER: --preload of it must warn that it registered nothing.
int taskwire_test_no_functions_here() { return 0; }
