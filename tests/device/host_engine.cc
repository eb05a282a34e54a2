#include "host_engine.h"

#include <algorithm>
#include <cstring>

#include "fisrig/sata/ata.h"

namespace fisrig::test {

namespace {
constexpr uint8_t kBsy = drive::ata::kStatusBsy, kDrq = drive::ata::kStatusDrq, kErr = drive::ata::kStatusErr;
}

std::vector<uint32_t> h2d_fis(const HostCommand& c) {
  return {
      FISRIG_FIS_REG_H2D | 1u << 15 | uint32_t(c.command) << 16 | uint32_t(c.features & 0xFF) << 24,
      uint32_t(c.lba & 0xFFFFFF) | uint32_t(c.device) << 24,
      uint32_t((c.lba >> 24) & 0xFFFFFF) | uint32_t(c.features >> 8) << 24,
      uint32_t(c.count),
      uint32_t(c.aux),
  };
}

HostEngine::HostEngine(HostLink& link) : link_(link) {
  link_.on_frame = [this](const HostRxFrame& f) { on_frame(f); };
  link_.on_sent = [this](const std::vector<uint32_t>& fis, bool ok) { on_sent(fis, ok); };
  link_.on_reset = [this] { on_reset(); };
}

size_t HostEngine::outstanding() const {
  size_t n = nonqueued_ ? 1 : 0;
  for (auto* t : tags_) n += t != nullptr;
  return n + waiting_.size();
}

void HostEngine::clock() {
  if (waiting_.empty() || !link_.connected() || !link_.tx_idle() || !awaiting_release_.empty() || nonqueued_)
    return;
  HostCommand* c = waiting_.front();
  bool queued_busy = std::any_of(tags_.begin(), tags_.end(), [](HostCommand* t) { return t != nullptr; });
  if (c->queued ? tags_[c->tag] != nullptr : queued_busy) return;
  waiting_.pop_front();
  c->h2d_cycle = link_.cycle();
  if (c->queued) {
    tags_[c->tag] = c;
    awaiting_release_.push_back(c);
  } else {
    nonqueued_ = c;
  }
  link_.send(h2d_fis(*c));
}

void HostEngine::finish(HostCommand* c, uint8_t status, uint8_t error) {
  c->done = true;
  c->status = status;
  c->error = error;
  c->done_cycle = link_.cycle();
}

void HostEngine::send_data(HostCommand* c, uint32_t bytes) {
  bytes = std::min<uint32_t>(bytes, uint32_t(c->out.size()) - c->out_sent);
  std::vector<uint32_t> f(1 + (bytes + 3) / 4, 0);
  f[0] = 0x46;
  std::memcpy(f.data() + 1, c->out.data() + c->out_sent, bytes);
  c->out_sent += bytes;
  link_.send(std::move(f));
}

void HostEngine::on_frame(const HostRxFrame& f) {
  if (f.fis.empty()) return;
  const std::vector<uint32_t>& d = f.fis;
  uint8_t type = uint8_t(d[0]);
  fis_types.push_back(type);
  if (!f.crc_ok && type != 0x46) {
    ++protocol_errors;
    return;
  }
  switch (type) {
    case 0x34: {  // Register D2H
      uint8_t status = uint8_t(d[0] >> 16), error = uint8_t(d[0] >> 24);
      if (!awaiting_release_.empty()) {
        awaiting_release_.front()->released = true;
        awaiting_release_.pop_front();
      } else if (nonqueued_) {
        nonqueued_->lba_out = (d[1] & 0xFFFFFF) | uint64_t(d[2] & 0xFFFFFF) << 24;
        finish(nonqueued_, status, error);
        nonqueued_ = nullptr;
        pio_in_ = false;
      } else {
        signatures.push_back(d);
      }
      break;
    }
    case 0x5F: {  // PIO Setup
      if (!nonqueued_) {
        ++protocol_errors;
        break;
      }
      ++nonqueued_->pio_setups;
      bool to_host = (d[0] >> 13) & 1;
      uint16_t bytes = uint16_t(d[4]);
      if (to_host) {
        pio_in_ = true;
        pio_e_status_ = uint8_t(d[3] >> 24);
      } else {
        send_data(nonqueued_, bytes);
      }
      break;
    }
    case 0x39: {  // DMA Activate
      HostCommand* c = out_target_ ? out_target_ : nonqueued_;
      if (!c) {
        ++protocol_errors;
        break;
      }
      ++c->dma_activates;
      send_data(c, 8192);
      break;
    }
    case 0x41: {  // DMA Setup
      uint8_t tag = uint8_t(d[1] & 0x1F);
      setup_tags.push_back(tag);
      if (!tags_[tag]) {
        ++protocol_errors;
        break;
      }
      if ((d[0] >> 13) & 1) {
        in_target_ = tags_[tag];
        in_expect_ = d[5];
      } else {
        out_target_ = tags_[tag];
      }
      break;
    }
    case 0x46: {  // Data
      HostCommand* c = in_target_ ? in_target_ : nonqueued_;
      if (!c) {
        ++protocol_errors;
        break;
      }
      ++c->data_fises_in;
      if (!f.crc_ok) {
        ++c->bad_crc_fises_in;
      } else {
        const uint8_t* p = reinterpret_cast<const uint8_t*>(d.data() + 1);
        c->in.insert(c->in.end(), p, p + (d.size() - 1) * 4);
      }
      if (in_target_ && c->in.size() + 8192u * c->bad_crc_fises_in >= in_expect_) in_target_ = nullptr;
      if (pio_in_ && c == nonqueued_) {
        pio_in_ = false;
        if (!(pio_e_status_ & (kBsy | kDrq))) {  // the last block: E_Status ends the command
          finish(c, pio_e_status_, 0);
          nonqueued_ = nullptr;
        }
      }
      break;
    }
    case 0xA1: {  // Set Device Bits
      uint8_t status = uint8_t(((d[0] >> 16) & 7) | ((d[0] >> 20) & 7) << 4);
      uint8_t error = uint8_t(d[0] >> 24);
      sdb_sactive.push_back(d[1]);
      for (int t = 0; t < 32; ++t) {
        if (!(d[1] >> t & 1)) continue;
        if (!tags_[t]) {
          ++protocol_errors;
          continue;
        }
        finish(tags_[t], status & ~kErr, 0);
        if (in_target_ == tags_[t]) in_target_ = nullptr;
        if (out_target_ == tags_[t]) out_target_ = nullptr;
        tags_[t] = nullptr;
      }
      if (status & kErr) {
        // Every outstanding queued command is aborted; READ LOG EXT 10h names the failed one.
        ncq_errors.push_back({status, error});
        for (auto*& t : tags_) {
          if (!t) continue;
          t->ncq_failed = true;
          finish(t, status, error);
          t = nullptr;
        }
        in_target_ = out_target_ = nullptr;
      }
      break;
    }
    default:
      ++protocol_errors;
  }
}

void HostEngine::on_sent(const std::vector<uint32_t>& fis, bool ok) {
  if (ok || fis.empty()) return;
  uint8_t type = uint8_t(fis[0]);
  if (type == 0x27) {
    // A Register H2D answered R_ERR: send it again (the SATA transport's retry).
    HostCommand* c = nullptr;
    if (nonqueued_) c = nonqueued_;
    for (auto* t : tags_)
      if (t && h2d_fis(*t) == fis) c = t;
    if (c) ++c->h2d_resends;
    link_.send(fis);
  } else if (type == 0x46) {
    HostCommand* c = out_target_ ? out_target_ : nonqueued_;
    if (c) ++c->data_r_errs;
  }
}

void HostEngine::abandon() {
  waiting_.clear();
  nonqueued_ = nullptr;
  tags_.fill(nullptr);
  awaiting_release_.clear();
  in_target_ = out_target_ = nullptr;
  pio_in_ = false;
}

void HostEngine::on_reset() {
  auto lose = [&](HostCommand* c) {
    if (!c || c->done) return;
    c->lost = true;
    c->done = true;
    c->done_cycle = link_.cycle();
  };
  lose(nonqueued_);
  nonqueued_ = nullptr;
  for (auto*& t : tags_) {
    lose(t);
    t = nullptr;
  }
  awaiting_release_.clear();
  in_target_ = out_target_ = nullptr;
  pio_in_ = false;
}

}  // namespace fisrig::test
