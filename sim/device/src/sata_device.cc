#include "fisrig/device/sata_device.h"

#include <algorithm>
#include <cstdio>

extern "C" {
#include "fisrig/engine_if.h"
}

namespace fisrig::device {

namespace {
// The Drive's copy: no link faults, and no speed faster than the device negotiates (IDENTIFY
// word 76 lists what the device side can do).
drive::DriveConfig for_drive(drive::DriveConfig c, int max_gen) {
  c.interface.max_gen = std::min<uint32_t>(c.interface.max_gen, uint32_t(std::max(1, max_gen)));
  c.faults.r_err_rate = 0;
  c.faults.hold_storm_rate = 0;
  c.faults.hold_storm_ns = 0;
  return c;
}
// The drive is told of the time passing (idle_until: an idle drive's cache flush and GC)
// at each of the current pins' conversions, so that what they read includes the GC an idle
// drive started; idle_until is the same told once or in steps.
constexpr uint64_t kIdleTickMask = FISRIG_CURRENT_PIN_CYCLES - 1;
static_assert((FISRIG_CURRENT_PIN_CYCLES & kIdleTickMask) == 0, "a power of two");
}  // namespace

SataDevice::SataDevice(drive::DriveConfig config, int max_gen)
    : faults_(config.faults),
      drive_(for_drive(std::move(config), max_gen)),
      oob_(int(drive_.config().interface.max_gen)),
      link_(counters_, faults_),
      commands_(drive_, codec_, counters_) {}

void SataDevice::reset_link() {
  link_.reset();
  commands_.reset();
  up_ = false;
}

void SataDevice::power_edge(bool on, uint64_t cycle) {
  drive::SimTime now = cycle_ns(cycle);
  power_ = on;
  if (!on) {
    drive_.idle_until(now);  // what an idle drive did before the cut (cache flush, GC)
    drive_.power_off(now);
    oob_.power_off();
    ++counters_.power_offs;
  } else {
    drive_.power_on(now);
    ready_cycle_ = first_cycle_at(drive_.ready_at());
    oob_.power_on();
    ++counters_.power_ons;
  }
  reset_link();
}

// The drive has power while every rail it runs on is on and P3 is not asserted.
static_assert(FISRIG_PINS_3V3 == 1u << FISRIG_PIN_3V3 && FISRIG_PINS_5V == 1u << FISRIG_PIN_5V &&
              FISRIG_PINS_12V == 1u << FISRIG_PIN_12V && FISRIG_PINS_P3 == 1u << FISRIG_PIN_P3,
              "pins.h's bits are engine_if.h's pins");
bool SataDevice::powered_by(uint8_t pins) const {
  uint32_t needs = drive_.config().power.rails;
  return (pins & needs) == needs && !(pins & FISRIG_PINS_P3);
}

void SataDevice::clock_wire(const fisrig_pins_in& in, fisrig_pins_out& out) {
  uint64_t cycle = cycle_++;
  ++counters_.cycles;
  if (in.power != pins_) {  // an edge on a pin: the drive's power follows its rails and P3
    pins_ = in.power;
    if (powered_by(pins_) != power_) power_edge(!power_, cycle);
  }
  if (!(cycle & kIdleTickMask)) current_ma_ = drive_.sensed_ma(cycle_ns(cycle));  // 0 without power

  // Once linked, only a COMRESET concerns the OOB state machine (the common, fast path).
  if (!oob_.linked() || in.tx_cominit) {
    uint64_t cominits = oob_.cominits_sent();
    if (oob_.clock(in, cycle, ready_cycle_) == DeviceOob::Event::kComreset) {
      drive_.comreset(cycle_ns(cycle));
      ++counters_.comresets;
      reset_link();
    }
    counters_.cominits_sent += oob_.cominits_sent() - cominits;
    if (!oob_.linked()) {
      oob_.drive_pins(out);
      return;
    }
  }

  // Below Gen3 the link layer moves a dword only on the transceiver's dword cycles.
  if (in.dword_gap) {
    out = held_;
    return;
  }
  link::LinkWord rx{in.tx_data, (in.tx_charisk & 1) != 0};
  bool have = !in.tx_idle;
  if (!up_ && have && rx.k && rx.data != link::prim::kAlign) {
    // The host's PHY control has seen our SYNCs and is READY: the link is up.
    up_ = true;
    ++counters_.link_ups;
    counters_.link_gen = oob_.gen();
    drive_.set_link_gen(uint32_t(oob_.gen()));  // IDENTIFY word 77
    link_.set_cycles_per_dword(cycles_per_dword(oob_.gen()));
    link_.enable(true);
    commands_.link_up();
  }
  DeviceLink::Events ev;
  link::LinkWord tx = link_.clock(have, rx, ev);
  if (ev.received) commands_.on_fis(link_.rx_fis(), link_.rx_len(), ev.rx_ok, cycle);
  if (ev.received && drive_.link_drop_at() != drive::kNever) {  // only a command drops it
    // The drive reset its port (link_drop_after_commands): its transmitter goes idle, as
    // while it boots, and it sends COMINIT when it is ready again; the host sees its link
    // fall and goes through OOB (its COMRESETs are not answered before then).
    drive_.link_drop_seen();
    oob_.power_on();
    ready_cycle_ = first_cycle_at(drive_.ready_at());
    reset_link();
    oob_.drive_pins(out);
    return;
  }
  if (ev.sent) commands_.on_sent(ev.sent_ok);
  if (link_.can_load() && cycle >= commands_.wake_cycle() && commands_.next_fis(link_.frame(), cycle)) link_.load();
  out.rx_data = tx.data;
  out.rx_charisk = tx.k ? 1 : 0;
  out.rx_idle = 0;
  out.rx_cominit = 0;
  out.rx_comwake = 0;
  held_ = out;
}

std::string SataDevice::stats_text() const {
  std::string s = counters_.text();
  const drive::DriveStats& d = drive_.stats();
  const drive::SsdStats& ssd = drive_.ssd().stats();
  char line[96];
  auto put = [&](const char* name, uint64_t v) {
    std::snprintf(line, sizeof line, "drive.%s %llu\n", name, static_cast<unsigned long long>(v));
    s += line;
  };
  put("commands", d.commands);
  put("errors", d.errors);
  put("ncq_errors", d.ncq_errors);
  put("ncq_aborted", d.ncq_aborted);
  put("sectors_read", ssd.sectors_read);
  put("sectors_written", ssd.sectors_written);
  put("sectors_trimmed", ssd.sectors_trimmed);
  put("icrc_failures", d.icrc_failures);
  put("comresets", d.comresets);
  put("power_cycles", ssd.power_cycles);
  put("dropped_at_power_loss", d.dropped_at_power_loss);
  put("ignored_while_off", d.ignored_while_off);
  put("ignored_while_hung", d.ignored_while_hung);
  put("pattern_words", codec_.dictionary_size());
  return s;
}

}  // namespace fisrig::device
