/* print.h - strings from data files on a terminal, in JSON and in CSV
 * (print.c): control characters and invalid UTF-8 never reach the
 * output unescaped.  */
#ifndef TALLY_TOOLS_PRINT_H
#define TALLY_TOOLS_PRINT_H

#include <stddef.h>
#include <stdint.h>

/* Byte length of the valid UTF-8 sequence at S, or 0.  */
size_t utf8_len (const unsigned char *s);

size_t put_text (const char *str);
size_t text_width (const char *str);
enum escape
{
  ESCAPE_C,     /* a C string literal (dump) */
  ESCAPE_JSON,  /* JSON, \n, \t and \r as such (report) */
  ESCAPE_JSON_U /* JSON, every control character as \u00XX (diff) */
};
void put_escaped (const char *str, enum escape how);
void put_json (const char *str);
void put_fn_names (const char *first, const char *sep, enum escape how,
                   const char *name, const char *symbol, const char *origin,
                   const char *file);
void put_csv (const char *s);
void put_quoted (const char *str);
const char *plural (uint64_t n, const char *one, const char *many);
int count_digits (uint64_t v);
const char *kind_name (uint32_t kind);

#endif /* TALLY_TOOLS_PRINT_H */
