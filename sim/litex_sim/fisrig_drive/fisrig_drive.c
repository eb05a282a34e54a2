/*
 * litex_sim module: the simulated drive (sim/device, through its C API) on the rig SoC's
 * simulated transceiver pins. Once per rising edge of sys_clk (the SATA clock) it samples
 * what the host drives, clocks the drive one cycle and drives the drive's answer back, which
 * the simulated transceiver's RX register (hw/fisrig_hw/phy/sim_phy.py) takes at the next edge.
 *
 * sim_config: add_module("fisrig_drive", "sata", clocks="sys_clk",
 *                        args={"profile": "tiny-1gb", "faults": "boot_us=100"})
 * It prints each change of the drive's link state with the cycle ("[fisrig_drive] link up
 * at cycle N"); litex_sim runs until it is killed, so nothing waits for an exit.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "modules.h"
#include "fisrig/device/device_c.h"

struct session_s {
  char *sys_clk;
  uint32_t *tx_data;
  uint8_t *tx_charisk, *tx_idle, *tx_cominit, *tx_comwake, *power, *dword_gap;
  uint32_t *rx_data;
  uint8_t *rx_charisk, *rx_idle, *rx_cominit, *rx_comwake;
  uint16_t *current_ma;
  clk_edge_state_t edge;
  void *dev;
  int link_up;
  struct fisrig_pins_out out;
};

static int get_pad(struct pad_s *pads, const char *name, void **signal) {
  for (int i = 0; pads[i].name; ++i) {
    if (!strcmp(pads[i].name, name)) {
      *signal = pads[i].signal;
      return RC_OK;
    }
  }
  fprintf(stderr, "[fisrig_drive] no pad %s\n", name);
  return RC_ERROR;
}

/* args is the module's JSON object; a missing key gives fallback. */
static const char *arg(json_object *args, const char *key, const char *fallback) {
  json_object *v;
  if (args && json_object_object_get_ex(args, key, &v)) return json_object_get_string(v);
  return fallback;
}

static int drive_start(void *base) {
  (void)base;
  return RC_OK;
}

static int drive_new(void **sess, char *args) {
  struct session_s *s = calloc(1, sizeof *s);
  if (!s) return RC_NOENMEM;
  json_object *js = args ? json_tokener_parse(args) : NULL;
  const char *faults = arg(js, "faults", "");
  char err[256];
  s->dev = fisrig_device_new(arg(js, "profile", "tiny-1gb"), *faults ? faults : NULL, err, sizeof err);
  if (js) json_object_put(js);
  if (!s->dev) {
    fprintf(stderr, "[fisrig_drive] %s\n", err);
    free(s);
    return RC_ERROR;
  }
  s->out.rx_idle = 1;
  *sess = s;
  return RC_OK;
}

static int drive_add_pads(void *sess, struct pad_list_s *plist) {
  struct session_s *s = sess;
  int rc = RC_OK;
  if (!strcmp(plist->name, "sys_clk")) return get_pad(plist->pads, "sys_clk", (void **)&s->sys_clk);
  if (strcmp(plist->name, "sata")) return RC_OK;
  struct { const char *name; void **where; } pads[] = {
    {"tx_data", (void **)&s->tx_data}, {"tx_charisk", (void **)&s->tx_charisk},
    {"tx_idle", (void **)&s->tx_idle}, {"tx_cominit", (void **)&s->tx_cominit},
    {"tx_comwake", (void **)&s->tx_comwake}, {"power", (void **)&s->power},
    {"dword_gap", (void **)&s->dword_gap},
    {"rx_data", (void **)&s->rx_data}, {"rx_charisk", (void **)&s->rx_charisk},
    {"rx_idle", (void **)&s->rx_idle}, {"rx_cominit", (void **)&s->rx_cominit},
    {"rx_comwake", (void **)&s->rx_comwake}, {"current_ma", (void **)&s->current_ma},
  };
  for (size_t i = 0; i < sizeof pads / sizeof pads[0]; ++i)
    if (get_pad(plist->pads, pads[i].name, pads[i].where) != RC_OK) rc = RC_ERROR;
  return rc;
}

static int drive_tick(void *sess, uint64_t time_ps) {
  struct session_s *s = sess;
  (void)time_ps;
  if (!clk_pos_edge(&s->edge, *s->sys_clk)) return RC_OK;
  struct fisrig_pins_in in = {
    .tx_data = *s->tx_data, .tx_charisk = *s->tx_charisk, .tx_idle = *s->tx_idle,
    .tx_cominit = *s->tx_cominit, .tx_comwake = *s->tx_comwake, .power = *s->power,
    .dword_gap = *s->dword_gap,
  };
  fisrig_device_clock(s->dev, &in, &s->out);
  *s->rx_data = s->out.rx_data;
  *s->rx_charisk = s->out.rx_charisk;
  *s->rx_idle = s->out.rx_idle;
  *s->rx_cominit = s->out.rx_cominit;
  *s->rx_comwake = s->out.rx_comwake;
  *s->current_ma = s->out.current_ma;
  int up = fisrig_device_link_up(s->dev);
  if (up != s->link_up) {
    s->link_up = up;
    printf("[fisrig_drive] link %s at cycle %llu\n", up ? "up" : "down",
           (unsigned long long)fisrig_device_cycles(s->dev));
    fflush(stdout);
  }
  return RC_OK;
}

static int drive_close(void *sess) {
  struct session_s *s = sess;
  fisrig_device_free(s->dev);
  free(s);
  return RC_OK;
}

static struct ext_module_s ext_mod = {"fisrig_drive", drive_start, drive_new, drive_add_pads, drive_close, drive_tick};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *)) {
  return register_module(&ext_mod);
}
