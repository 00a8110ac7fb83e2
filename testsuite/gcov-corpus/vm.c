/* A small stack machine, written the way interpreters are. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum op { OP_PUSH, OP_ADD, OP_SUB, OP_MUL, OP_JNZ, OP_DUP, OP_POP, OP_PRINT, OP_HALT };

struct vm {
  long stack[64];
  int sp;
  int steps;
  char log[256];
  size_t loglen;
};

static void vm_log(struct vm *vm, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(vm->log + vm->loglen, sizeof vm->log - vm->loglen,
                    fmt, ap);
  va_end(ap);
  if (n > 0 && (size_t) n < sizeof vm->log - vm->loglen)
    vm->loglen += (size_t) n;
}

static long sum_args(int n, ...)
{
  va_list ap;
  long s = 0;
  va_start(ap, n);
  while (n-- > 0)
    s += va_arg(ap, int);
  va_end(ap);
  return s;
}

#define PUSH(v) (vm->stack[vm->sp++] = (v))
#define POP() (vm->stack[--vm->sp])
#define NEED(k) do { if (vm->sp < (k)) { vm_log(vm, "underflow at %d\n", pc); \
                                         return -1; } } while (0)

static int run(struct vm *vm, const int *code, int len)
{
  int pc = 0;
  for (;;) {
    if (pc < 0 || pc >= len)
      return -2;
    vm->steps++;
    switch ((enum op) code[pc++]) {
    case OP_PUSH:
      PUSH(code[pc++]);
      break;
    case OP_ADD: case OP_SUB: case OP_MUL: {
      NEED(2);
      long b = POP(), a = POP();
      PUSH(code[pc - 1] == OP_ADD ? a + b
           : code[pc - 1] == OP_SUB ? a - b
           : a * b);
      break;
    }
    case OP_JNZ:
      NEED(1);
      if (POP() != 0)
        pc = code[pc];
      else
        pc++;
      continue;
    case OP_DUP:
      NEED(1);
      { long t = POP(); PUSH(t); PUSH(t); }
      break;
    case OP_POP:
      NEED(1);
      (void) POP();
      break;
    case OP_PRINT:
      NEED(1);
      vm_log(vm, "%ld\n",
             vm->stack[vm->sp - 1]);
      break;
    case OP_HALT:
      goto out;
    default:
      return -3;
    }
  }
out:
  return vm->sp > 0 ? (int) vm->stack[vm->sp - 1] : 0;
}

int main(void)
{
  /* countdown from 5, printing each value */
  static const int prog[] = {
    OP_PUSH, 5,
    OP_DUP, OP_PRINT, OP_POP,
    OP_PUSH, -1, OP_ADD,
    OP_DUP, OP_JNZ, 2,
    OP_HALT,
  };
  static const int bad[] = { OP_ADD, OP_HALT };
  static const int wild[] = { 42 };
  struct vm vm;
  memset(&vm, 0, sizeof vm);
  int r = run(&vm, prog, (int) (sizeof prog / sizeof prog[0]));
  memset(&vm, 0, sizeof vm);
  r += run(&vm, bad, 2) + run(&vm, wild, 1);
  r += (int) sum_args(4, 1, 2, 3, 4);
  fputs(vm.log, stdout);
  printf("%d %d\n", r, vm.steps);
  return 0;
}
