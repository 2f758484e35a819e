// A 1-byte `new char` deleted through a pointer to a 72-byte struct: with
// -fsized-deallocation (the default from C++14) the compiler calls
// ::operator delete(p, 72). Caught: secure (measure sized).
#include "common.h"
#include <new>

struct S { char b[72]; };

__attribute__((noinline)) static S *as_struct(char *c) { return (S *)launder(c); }

int main() {
  char *c = new char;
  *c = 1;
  delete as_struct(c);
  return not_caught("1-byte new char deleted as a 72-byte struct");
}
