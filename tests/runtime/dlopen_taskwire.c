/* A program that does not link libtaskwire loads it with dlopen (a plugin host, a Python
 * extension): that must work whatever allocator taskwire's own programs link (jemalloc cannot
 * be dlopened, its thread-local storage is initial-exec), and allocation must go on working. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PATH_TO_LIBTASKWIRE\n", argv[0]);
    return 2;
  }
  char* before = malloc(64);
  if (!before) return 1;
  strcpy(before, "allocated before dlopen");
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    fprintf(stderr, "dlopen failed: %s\n", dlerror());
    return 1;
  }
  char* after = malloc(1 << 20);
  if (!after) return 1;
  memset(after, 1, 1 << 20);
  free(after);
  free(before); /* allocated before the library came: freed by the same allocator */
  if (dlclose(lib) != 0) {
    fprintf(stderr, "dlclose failed: %s\n", dlerror());
    return 1;
  }
  printf("dlopen of %s: ok\n", argv[1]);
  return 0;
}
