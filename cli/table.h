/*
 * table.h - the command line's human output: a table of text cells padded
 * to columns by their width on a terminal, not their bytes, so that
 * Chinese headers and job names (two columns per character) line up with
 * ASCII ones; and small helpers that format API values for it.
 *
 * Cells are copied; a table holds at most CLI_TABLE_MAX_COLS columns.
 * Thread-safety: one table per thread; no globals.
 */
#ifndef TY_CLI_TABLE_H
#define TY_CLI_TABLE_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "err.h"

#define CLI_TABLE_MAX_COLS 12

struct cli_table;

/* The terminal width of UTF-8 text s: East Asian wide and fullwidth
 * characters count 2, combining marks and controls 0, others 1; a byte
 * that is not valid UTF-8 counts 1. */
size_t cli_text_width(const char *s);

/* 1 when the n bytes at s are valid UTF-8 (no overlong forms, no
 * surrogates), else 0. */
int cli_utf8_valid(const char *s, size_t n);

/* A table with ncols columns (1..CLI_TABLE_MAX_COLS). right_align (may be
 * NULL) says per column whether its cells are right-aligned (numbers).
 * NULL on ENOMEM or a bad ncols. Free with cli_table_free(). */
struct cli_table *cli_table_new(size_t ncols, const int *right_align);

/* No-op on NULL. */
void cli_table_free(struct cli_table *t);

/* Appends a row of ncols cells (each copied; NULL prints empty). A tab or
 * newline inside a cell is shown as a space, so a row stays one line.
 * RC_ENOMEM. */
enum rc cli_table_add(struct cli_table *t, const char *const *cells) TY_WUR;

/* Prints the rows, the first as given (the header), columns two spaces
 * apart, no trailing spaces. */
void cli_table_print(const struct cli_table *t, FILE *out);

/* The text of API value v for a cell, into buf (size n): a string as it
 * is, an integer or real in decimal, true/false, "-" for null or missing. */
const char *cli_cell(const json_t *v, char *buf, size_t n);

/* An API timestamp ("2026-12-01T11:16:03.123456+00:00") shortened to
 * "2026-12-01 11:16:03" for a cell, into buf; other values as cli_cell. */
const char *cli_cell_time(const json_t *v, char *buf, size_t n);

#endif
