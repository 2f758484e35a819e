/* dlist.h: the one intrusive doubly-linked list: push at the head or the
 * tail, unlink. Every list of src/ whose nodes link both ways uses it.
 *
 * A list is its head, and its tail where it keeps one (the HK_DLT_ forms;
 * the HK_DL_ forms keep a head alone). Each node holds two link fields,
 * named by the caller (next, prev; all_next, all_prev; f.dnext, f.dprev),
 * so a node may be on several lists. A node is named by a handle: a
 * pointer, or an index into a table; 0 (NULL, or index 0, which names no
 * node) ends the list. The _AT forms take AT, a macro that turns a handle
 * into its node: HK_DL_PTR for pointers (the plain forms), or the caller's
 * own for a table (span_arena.c: `a->e[i].f`).
 *
 * Rules: the caller holds whatever guards the list; a node is pushed onto
 * a list it is not on; unlinking leaves the node's own links as they were
 * (a caller that walks on from it, or reuses them for a chain of its own,
 * may), so a caller that wants them cleared clears them. The arguments are
 * evaluated more than once: pass names, not calls. The debug build asserts
 * the links around every change: the head has no prev and the tail no
 * next, and the neighbours of a node unlinked point at it. */
#ifndef HK_DLIST_H
#define HK_DLIST_H

#include "base/report.h"

/* The node a pointer names. */
#define HK_DL_PTR(x) (*(x))

/* ---- a list with a head alone ---- */

/* x becomes the first node of the list at head. */
#define HK_DL_PUSH_AT(AT, head, x, next, prev)                     \
  do {                                                             \
    HK_ASSERT((x) != (head) && (!(head) || !AT(head).prev));       \
    AT(x).prev = 0;                                                \
    AT(x).next = (head);                                           \
    if (head) AT(head).prev = (x);                                 \
    (head) = (x);                                                  \
  } while (0)

/* x leaves the list at head. */
#define HK_DL_UNLINK_AT(AT, head, x, next, prev)                                 \
  do {                                                                           \
    HK_ASSERT(AT(x).prev ? AT(AT(x).prev).next == (x) : (head) == (x));          \
    HK_ASSERT(!AT(x).next || AT(AT(x).next).prev == (x));                        \
    if (AT(x).prev) AT(AT(x).prev).next = AT(x).next; else (head) = AT(x).next;  \
    if (AT(x).next) AT(AT(x).next).prev = AT(x).prev;                            \
  } while (0)

/* ---- a list with a head and a tail ---- */

/* x becomes the first node. */
#define HK_DLT_PUSH_HEAD_AT(AT, head, tail, x, next, prev)         \
  do {                                                             \
    HK_ASSERT(!(head) == !(tail) && (x) != (head));                \
    HK_ASSERT(!(head) || !AT(head).prev);                          \
    AT(x).prev = 0;                                                \
    AT(x).next = (head);                                           \
    if (head) AT(head).prev = (x); else (tail) = (x);              \
    (head) = (x);                                                  \
  } while (0)

/* x becomes the last node. */
#define HK_DLT_PUSH_TAIL_AT(AT, head, tail, x, next, prev)         \
  do {                                                             \
    HK_ASSERT(!(head) == !(tail) && (x) != (tail));                \
    HK_ASSERT(!(tail) || !AT(tail).next);                          \
    AT(x).next = 0;                                                \
    AT(x).prev = (tail);                                           \
    if (AT(x).prev) AT(AT(x).prev).next = (x); else (head) = (x);  \
    (tail) = (x);                                                  \
  } while (0)

/* x leaves the list. */
#define HK_DLT_UNLINK_AT(AT, head, tail, x, next, prev)                          \
  do {                                                                           \
    HK_ASSERT(AT(x).prev ? AT(AT(x).prev).next == (x) : (head) == (x));          \
    HK_ASSERT(AT(x).next ? AT(AT(x).next).prev == (x) : (tail) == (x));          \
    if (AT(x).prev) AT(AT(x).prev).next = AT(x).next; else (head) = AT(x).next;  \
    if (AT(x).next) AT(AT(x).next).prev = AT(x).prev; else (tail) = AT(x).prev;  \
  } while (0)

/* ---- the same, for nodes named by pointers ---- */

#define HK_DL_PUSH(head, x, next, prev) HK_DL_PUSH_AT(HK_DL_PTR, head, x, next, prev)
#define HK_DL_UNLINK(head, x, next, prev) HK_DL_UNLINK_AT(HK_DL_PTR, head, x, next, prev)
#define HK_DLT_PUSH_HEAD(head, tail, x, next, prev) HK_DLT_PUSH_HEAD_AT(HK_DL_PTR, head, tail, x, next, prev)
#define HK_DLT_PUSH_TAIL(head, tail, x, next, prev) HK_DLT_PUSH_TAIL_AT(HK_DL_PTR, head, tail, x, next, prev)
#define HK_DLT_UNLINK(head, tail, x, next, prev) HK_DLT_UNLINK_AT(HK_DL_PTR, head, tail, x, next, prev)

#endif
