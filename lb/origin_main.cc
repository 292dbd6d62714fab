// lb-origin placeholder until the proxy work lands.
#include <cstdio>
int main() {
  fprintf(stderr, "lb-origin: not built yet\n");
  return 2;
}
