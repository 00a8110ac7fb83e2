/* The shared library of the drop-in example: each function counts its own
   calls, so the program can print how often each ran (the test's oracle). */
#ifndef DROPIN_SHAPES_H
#define DROPIN_SHAPES_H
#ifdef __cplusplus
extern "C" {
#endif

struct shapes_calls
{
  long area, perimeter;
};
extern struct shapes_calls shapes_calls;

int area (int w, int h);
int perimeter (int w, int h);
int cxx_twice (int v); /* twice.cc */
long twice_calls (void);

#ifdef __cplusplus
}
#endif
#endif
