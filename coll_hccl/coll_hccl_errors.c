/*
 * coll_hccl_errors.c - coll_hccl's failures as MPI error classes and codes.
 *
 * Each engine status that can end a call is one MPI error class ("coll_hccl timeout", "coll_hccl
 * peer lost", ...), registered with MPI_Add_error_class the first time a call fails: MPI_Init is
 * not finished while components initialise, and MPI refuses new classes until it is. Each
 * distinct message becomes an error code of its class whose MPI_Error_string is the message, so
 * an application with MPI_ERRORS_RETURN reads what happened (MPI_Error_class tells the kind);
 * the communicator's error handler receives that code like any other.
 *
 * MPI_Error_string hands out at most MPI_MAX_ERROR_STRING - 1 bytes: a longer message is cut at
 * the last space that fits (never inside a UTF-8 character) and ends with " [...]"; the whole
 * message always goes to stderr too. MPI cannot free error codes, so the number of distinct
 * messages registered is bounded; beyond it, a per-class code points to stderr.
 *
 * Thread safety: one mutex around registration and the message cache, so that it is safe at
 * every thread level (calls fail on whatever thread progresses them).
 */
#include "coll_hccl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { kNumStatuses = 11, kMaxMessages = 256 };

typedef struct {
  int klass;
  char* message;
  int code;
} registered_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int classes[kNumStatuses];  /* MPI class per -status; 0 = not registered yet */
static int overflow[kNumStatuses]; /* the code used once kMaxMessages are registered */
static registered_t messages[kMaxMessages];
static int num_messages;

/* -status for error statuses, 0 (no class) for anything else. */
static int index_of(hccl_status_t st) {
  int i = -(int)st;
  return i > 0 && i < kNumStatuses ? i : 0;
}

/* The longest prefix of `s` that fits in `room` bytes with " [...]" after it, ending at a space
 * when there is one, and never inside a UTF-8 sequence. */
static size_t cut_length(const char* s, size_t room) {
  static const char ellipsis[] = " [...]";
  size_t limit = room - sizeof ellipsis; /* leaves the ellipsis and the NUL */
  size_t n = limit;
  while (n > 0 && ' ' != s[n]) --n;
  if (n < limit / 2) { /* no space in the second half: cut at a character boundary instead */
    n = limit;
    while (n > 0 && 0x80 == ((unsigned char)s[n] & 0xC0)) --n;
  }
  return n;
}

static void mpi_text(const char* klass, const char* message, char* out, size_t room) {
  size_t head = strlen(klass); /* a class name, far shorter than room */
  memcpy(out, klass, head);
  memcpy(out + head, ": ", 2);
  head += 2;
  size_t len = strlen(message);
  if (head + len < room) {
    memcpy(out + head, message, len + 1);
    return;
  }
  size_t n = cut_length(message, room - head);
  memcpy(out + head, message, n);
  memcpy(out + head + n, " [...]", sizeof " [...]");
}

/* Registers the class of status index i once; 0 when MPI refuses. Called under the lock. */
static int class_of(int i) {
  if (0 != classes[i]) return classes[i];
  int klass = 0;
  if (MPI_SUCCESS != MPI_Add_error_class(&klass)) return 0;
  char name[MPI_MAX_ERROR_STRING];
  snprintf(name, sizeof name, "coll_hccl %s", hccl_status_string((hccl_status_t)-i));
  if (MPI_SUCCESS != MPI_Add_error_string(klass, name)) return 0;
  classes[i] = klass;
  return klass;
}

static int new_code(int klass, const char* text) {
  int code = 0;
  if (MPI_SUCCESS != MPI_Add_error_code(klass, &code)) return 0;
  if (MPI_SUCCESS != MPI_Add_error_string(code, text)) return 0;
  return code;
}

static int lookup(int i, const char* message) {
  int klass = class_of(i);
  if (0 == klass) return 0;
  for (int k = 0; k < num_messages; ++k) {
    if (messages[k].klass == klass && 0 == strcmp(messages[k].message, message)) {
      return messages[k].code;
    }
  }
  char name[MPI_MAX_ERROR_STRING];
  snprintf(name, sizeof name, "coll_hccl %s", hccl_status_string((hccl_status_t)-i));
  char text[MPI_MAX_ERROR_STRING];
  if (num_messages == kMaxMessages) {
    if (0 == overflow[i]) {
      mpi_text(name, "this process registered too many distinct errors; see its stderr", text,
               sizeof text);
      overflow[i] = new_code(klass, text);
    }
    return overflow[i];
  }
  char* copy = strdup(message);
  if (NULL == copy) return 0;
  mpi_text(name, message, text, sizeof text);
  int code = new_code(klass, text);
  if (0 == code) {
    free(copy);
    return 0;
  }
  messages[num_messages++] = (registered_t){klass, copy, code};
  return code;
}

int mca_coll_hccl_error_code(hccl_status_t st, const char* message) {
  int i = index_of(st);
  if (0 == i) return MPI_ERR_INTERN;
  pthread_mutex_lock(&lock);
  int code = lookup(i, NULL != message ? message : "");
  pthread_mutex_unlock(&lock);
  return 0 != code ? code : MPI_ERR_INTERN;
}

void mca_coll_hccl_errors_finalize(void) {
  pthread_mutex_lock(&lock);
  for (int k = 0; k < num_messages; ++k) free(messages[k].message);
  num_messages = 0;
  /* The classes and codes stay registered with MPI (it cannot remove them). */
  pthread_mutex_unlock(&lock);
}
