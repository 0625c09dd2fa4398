/*
 * coll_hccl_settings.c - where coll_hccl's configuration comes from.
 *
 * Each engine setting may be given as a communicator info key, an MCA parameter and an HCCL
 * environment variable. The adapter does not interpret any of them: it lists the layers that are
 * set, highest precedence first (info key > MCA > env), with a printable source, and the engine
 * resolves and validates them, so that an error can name exactly what the user wrote and where.
 */
#include "coll_hccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/info.h"
#include "opal/util/output.h"

typedef struct setting_desc_t {
  const char* mca;  /* coll_hccl_<mca>; NULL: registered elsewhere (verbose) */
  const char* info; /* communicator info key, or NULL */
  const char* env;  /* HCCL environment variable, or NULL */
  const char* help;
  int level; /* OPAL_INFO_LVL_* */
} setting_desc_t;

static const setting_desc_t settings[HCCL_SETTING_COUNT] = {
    [HCCL_SETTING_ALGORITHM] =
        {"algorithm", "hccl_algo", "HCCL_ALGO",
         "Algorithm per level in HCCL_ALGO syntax, e.g. \"level0:NA;level1:ring\" or "
         "\"allreduce=level0:NA;level1:H-D_R/allgather=level0:NA;level1:NHR\". Empty: automatic "
         "selection. Precedence: communicator info key hccl_algo > this parameter > environment "
         "variable HCCL_ALGO > automatic.",
         OPAL_INFO_LVL_4},
    [HCCL_SETTING_SELECTION] =
        {"selection", NULL, NULL,
         "Automatic selection mode when no algorithm is forced: \"model\" (alpha-beta-gamma cost "
         "model, the default) or \"hccl_rules\" (HCCL's documented default choices).",
         OPAL_INFO_LVL_5},
    [HCCL_SETTING_BUFFSIZE_MB] =
        {"buffsize_mb", "hccl_buffsize", "HCCL_BUFFSIZE",
         "Scratch buffer per communicator in MB (integer >= 1); larger calls are run in chunks of "
         "this size. Empty: HCCL_BUFFSIZE, else the engine default (200). Info key hccl_buffsize "
         "overrides it per communicator.",
         OPAL_INFO_LVL_5},
    [HCCL_SETTING_DETERMINISTIC] =
        {"deterministic", "hccl_deterministic", "HCCL_DETERMINISTIC",
         "Reduction determinism: \"false\" (default), \"true\" (same result for the same input "
         "and rank count) or \"strict\" (also rank-order reduction). Empty: HCCL_DETERMINISTIC, "
         "else false. Info key hccl_deterministic overrides it per communicator.",
         OPAL_INFO_LVL_5},
    [HCCL_SETTING_HCCS_TLS] =
        {"hccs_tls", NULL, NULL,
         "UCX transports for the HCCS link class (peers on the same server), comma-separated as "
         "in UCX_TLS, e.g. \"self,sm,cma\". Empty: the engine default (shared memory).",
         OPAL_INFO_LVL_6},
    [HCCL_SETTING_ROCE_TLS] =
        {"roce_tls", NULL, NULL,
         "UCX transports for the RoCE link class (peers on other servers), comma-separated as in "
         "UCX_TLS, e.g. \"rc_verbs,ud_verbs\" or \"tcp\". Empty: the engine default (verbs when "
         "a RoCE/InfiniBand device exists, else tcp).",
         OPAL_INFO_LVL_6},
    [HCCL_SETTING_INTRA_ROCE] =
        {"intra_roce", NULL, "HCCL_INTRA_ROCE_ENABLE",
         "\"1\": carry traffic between ranks of the same server over the RoCE link class instead "
         "of HCCS (HCCL's HCCL_INTRA_ROCE_ENABLE); \"0\" (default): HCCS class.",
         OPAL_INFO_LVL_6},
    [HCCL_SETTING_TUNING_FILE] =
        {"tuning_file", NULL, NULL,
         "JSON file with measured cost-model parameters (alpha, beta per link class, gamma per "
         "type and op), as written by the calibration tool. Empty: built-in defaults.",
         OPAL_INFO_LVL_5},
    [HCCL_SETTING_TIMEOUT] =
        {"timeout", NULL, "HCCL_EXEC_TIMEOUT",
         "Seconds a collective may go without progress before it fails with an error instead of "
         "hanging; \"0\" = never. Empty: HCCL_EXEC_TIMEOUT, else the engine default.",
         OPAL_INFO_LVL_5},
    [HCCL_SETTING_VERBOSE] = {NULL, NULL, NULL, NULL, 0},
    [HCCL_SETTING_LEVEL0_LINK] =
        {"level0_link", NULL, "COLL_HCCL_LEVEL0_LINK",
         "What carries level0 (same-server) traffic: \"auto\" (default: the shared-memory link, "
         "slots and single copy, where it can be set up, else UCX tagged messages), \"shm\" (the "
         "shared-memory link; MPI_COMM_WORLD's set-up fails without it) or \"tagged\" (UCX tagged "
         "messages over the HCCS class). Must be equal on every rank.",
         OPAL_INFO_LVL_5},
    [HCCL_SETTING_TRACE] =
        {"trace", NULL, NULL,
         "Write the engine's timeline (every executor step and transfer: post and completion "
         "times on CLOCK_MONOTONIC, peer, bytes, level, call number, collective) as Chrome "
         "trace-event JSON for Perfetto. Each process writes this name with \"%r\" replaced by "
         "its MPI_COMM_WORLD rank, or, without \"%r\", this name followed by .<world rank>, at "
         "MPI_Finalize. Small calls run on shared-memory slots are not traced. At most "
         "coll_hccl_trace_events records are kept. Empty (default): no trace, no cost.",
         OPAL_INFO_LVL_5},
    [HCCL_SETTING_TRACE_EVENTS] =
        {"trace_events", NULL, NULL,
         "Most records (a step or a transfer) the trace keeps per process, integer >= 1; the "
         "first ones are kept, later ones only counted (\"dropped\" in the file), so memory "
         "(56 bytes a record) and the file (about 300 bytes a record) stay bounded. Empty: "
         "100000.",
         OPAL_INFO_LVL_5},
    /* No info key: the slots are laid out once, in MPI_COMM_WORLD's segment, and every later
     * communicator shares them (as level0_link). */
    [HCCL_SETTING_SHM_SLOT_BYTES] =
        {"shm_slot_bytes", NULL, "HCCL_SHM_SLOT_BYTES",
         "Payload bytes of a shared-memory slot, a multiple of 64 from 1024 to 1048576 (units K "
         "and M allowed, e.g. \"16K\"): at two ranks on a server exactly this, with as many "
         "slots a channel as keep a 1 MiB window (4 to 64); on larger servers at most this, "
         "within the segment's 64 MiB budget. Fixed when MPI_COMM_WORLD sets up its segment; "
         "must be equal on every rank. Empty: HCCL_SHM_SLOT_BYTES, else the engine's choice "
         "(64 KiB at two ranks, at most 16 KiB on larger servers).",
         OPAL_INFO_LVL_6},
};

int mca_coll_hccl_register_settings(void) {
  mca_coll_hccl_component_t* c = &mca_coll_hccl_component;
  for (int i = 0; i < HCCL_SETTING_COUNT; ++i) {
    if (NULL == settings[i].mca) continue;
    c->setting_value[i] = "";
    c->setting_var[i] = mca_base_component_var_register(
        &c->super.collm_version, settings[i].mca, settings[i].help, MCA_BASE_VAR_TYPE_STRING, NULL,
        0, 0, settings[i].level, MCA_BASE_VAR_SCOPE_READONLY, &c->setting_value[i]);
  }
  return OMPI_SUCCESS;
}

static char* keep(mca_coll_hccl_settings_t* s, char* str) {
  if (NULL != str) s->owned[s->num_owned++] = str;
  return str;
}

static void add_layer(hccl_setting_t* setting, const char* value, const char* source) {
  if (NULL == value || '\0' == value[0] || NULL == source) return;
  if (setting->num_layers >= HCCL_MAX_SETTING_LAYERS) return;
  setting->layers[setting->num_layers].value = value;
  setting->layers[setting->num_layers].source = source;
  ++setting->num_layers;
}

static char* concat(const char* a, const char* b, const char* c, const char* d) {
  size_t n = strlen(a) + strlen(b) + strlen(c) + strlen(d);
  char* out = malloc(n + 1);
  if (NULL != out) snprintf(out, n + 1, "%s%s%s%s", a, b, c, d);
  return out;
}

/* Open MPI delivers `mpirun --mca` to the processes as OMPI_MCA_ environment variables, hence the
 * wording of the environment case. */
static const char* mca_origin(int var_index, const char** file) {
  const mca_base_var_t* var = NULL;
  *file = "";
  if (var_index < 0 || OPAL_SUCCESS != mca_base_var_get(var_index, &var) || NULL == var) {
    return "";
  }
  switch (var->mbv_source) {
    case MCA_BASE_VAR_SOURCE_COMMAND_LINE:
      return " (command line)";
    case MCA_BASE_VAR_SOURCE_ENV:
      return " (OMPI_MCA_ environment or mpirun --mca)";
    case MCA_BASE_VAR_SOURCE_FILE:
      *file = NULL != var->mbv_source_file ? var->mbv_source_file : "?";
      return " (file ";
    case MCA_BASE_VAR_SOURCE_SET:
      return " (set by the program)";
    case MCA_BASE_VAR_SOURCE_OVERRIDE:
      return " (override)";
    default:
      return " (default)";
  }
}

static void add_mca_layer(mca_coll_hccl_settings_t* s, int id, const char* value) {
  const char* file;
  const char* origin = mca_origin(mca_coll_hccl_component.setting_var[id], &file);
  const char* name = HCCL_SETTING_VERBOSE == id ? "verbose" : settings[id].mca;
  char* source = concat("MCA coll_hccl_", name, origin, "");
  if ('\0' != file[0] && NULL != source) { /* " (file " + path + ")" */
    char* with_file = concat(source, file, ")", "");
    free(source);
    source = with_file;
  }
  add_layer(&s->layers[id], value, keep(s, source));
}

static char* info_value(ompi_communicator_t* comm, const char* key);

int mca_coll_hccl_has_info(ompi_communicator_t* comm, const char* key) {
  char* v = info_value(comm, key);
  free(v);
  return NULL != v;
}

static char* info_value(ompi_communicator_t* comm, const char* key) {
  opal_info_t* info = comm->super.s_info;
  int flag = 0;
  if (NULL == info || NULL == key) return NULL;
#if OMPI_MAJOR_VERSION >= 5
  opal_cstring_t* str = NULL;
  if (OPAL_SUCCESS != opal_info_get(info, key, &str, &flag) || !flag || NULL == str) return NULL;
  char* out = strdup(str->string);
  OBJ_RELEASE(str);
  return out;
#else
  int len = 0;
  if (OPAL_SUCCESS != opal_info_get_valuelen(info, key, &len, &flag) || !flag || len < 0) {
    return NULL;
  }
  char* out = malloc((size_t)len + 1);
  if (NULL == out) return NULL;
  if (OPAL_SUCCESS != opal_info_get(info, key, len, out, &flag) || !flag) {
    free(out);
    return NULL;
  }
  out[len] = '\0';
  return out;
#endif
}

int mca_coll_hccl_collect_settings(ompi_communicator_t* comm, mca_coll_hccl_settings_t* s) {
  mca_coll_hccl_component_t* c = &mca_coll_hccl_component;
  memset(s, 0, sizeof *s);
  for (int id = 0; id < HCCL_SETTING_COUNT; ++id) {
    const setting_desc_t* d = &settings[id];
    if (NULL != d->info) {
      char* v = keep(s, info_value(comm, d->info));
      add_layer(&s->layers[id], v,
                NULL != v ? keep(s, concat("info key ", d->info, "", "")) : NULL);
    }
    if (HCCL_SETTING_VERBOSE == id) {
      if (0 != c->verbose) {
        char number[16];
        snprintf(number, sizeof number, "%d", c->verbose);
        add_mca_layer(s, id, keep(s, strdup(number)));
      }
    } else if (NULL != d->mca) {
      add_mca_layer(s, id, c->setting_value[id]);
    }
    if (NULL != d->env) {
      const char* v = getenv(d->env);
      add_layer(&s->layers[id], v, NULL != v ? keep(s, concat("env ", d->env, "", "")) : NULL);
    }
  }
  return OMPI_SUCCESS;
}

void mca_coll_hccl_free_settings(mca_coll_hccl_settings_t* s) {
  for (int i = 0; i < s->num_owned; ++i) free(s->owned[i]);
  s->num_owned = 0;
}

static const char* setting_name(int id) {
  return HCCL_SETTING_VERBOSE == id ? "verbose" : settings[id].mca;
}

/* Verbose 2: exactly what the engine is given, so that precedence can be checked from outside. */
void mca_coll_hccl_log_settings(const mca_coll_hccl_settings_t* s, const char* comm_name) {
  int out = mca_coll_hccl_component.output;
  for (int id = 0; id < HCCL_SETTING_COUNT; ++id) {
    const hccl_setting_t* set = &s->layers[id];
    if (0 == set->num_layers) continue;
    char line[1024];
    int used = snprintf(line, sizeof line, "%s: setting %s:", comm_name, setting_name(id));
    for (int l = 0; l < set->num_layers && used > 0 && (size_t)used < sizeof line; ++l) {
      used += snprintf(line + used, sizeof line - (size_t)used, "%s '%s' from %s",
                       0 == l ? "" : " >", set->layers[l].value, set->layers[l].source);
    }
    opal_output_verbose(2, out, "%s", line);
  }
}
