#include "fisrig/link/framing.h"

#include "fisrig/link/crc.h"

namespace fisrig::link {

std::string_view primitive_name(uint32_t d) {
  switch (d) {
    case prim::kAlign: return "ALIGN";
    case prim::kCont: return "CONT";
    case prim::kSync: return "SYNC";
    case prim::kRRdy: return "R_RDY";
    case prim::kROk: return "R_OK";
    case prim::kRErr: return "R_ERR";
    case prim::kRIp: return "R_IP";
    case prim::kXRdy: return "X_RDY";
    case prim::kWtrm: return "WTRM";
    case prim::kSof: return "SOF";
    case prim::kEof: return "EOF";
    case prim::kHold: return "HOLD";
    case prim::kHolda: return "HOLDA";
    default: return {};
  }
}

std::vector<LinkWord> frame(const std::vector<uint32_t>& fis) {
  std::vector<LinkWord> out;
  out.reserve(fis.size() + 3);
  out.push_back(primitive(prim::kSof));
  Scrambler s;  // reset at every SOF
  for (uint32_t d : fis) out.push_back(LinkWord{s.scramble(d), false});
  out.push_back(LinkWord{s.scramble(crc_of(fis.data(), fis.size())), false});
  out.push_back(primitive(prim::kEof));
  return out;
}

void AlignInserter::push(const LinkWord& w, std::vector<LinkWord>& out) {
  while (align_due()) out.push_back(primitive(prim::kAlign));
  out.push_back(w);
}

LinkWord ContEncoder::next(uint32_t p) {
  if (p == last_ && repeats_ >= 2) {
    ++repeats_;
    if (repeats_ == 3) {
      junk_.reset();
      in_junk_ = true;
      return primitive(prim::kCont);
    }
    return LinkWord{junk_.next(), false};  // junk: never a K character
  }
  return next_fresh(p);
}

LinkWord ContEncoder::next_fresh(uint32_t p) {
  repeats_ = p == last_ ? repeats_ + 1 : 1;
  last_ = p;
  in_junk_ = false;
  return primitive(p);
}

void ContEncoder::push(uint32_t p, std::vector<LinkWord>& out) { out.push_back(next(p)); }

void ContEncoder::data(const LinkWord& w, std::vector<LinkWord>& out) {
  if (in_junk_) out.push_back(end_junk());
  data();
  out.push_back(w);
}

void FrameReceiver::reset() {
  in_frame_ = after_cont_ = data_flowing_ = oversize_ = false;
  current_ = 0;
  words_.clear();
}

bool FrameReceiver::push(const LinkWord& w) {
  if (w.k) {
    if (w.data != prim::kAlign) data_flowing_ = false;
    switch (w.data) {
      case prim::kAlign:
        return false;  // transparent everywhere
      case prim::kCont:
        after_cont_ = true;  // the primitive before it goes on; junk follows
        return false;
      case prim::kHold:
      case prim::kHolda:
        current_ = w.data;
        after_cont_ = false;
        return false;  // a pause inside a frame
      case prim::kSof:
        in_frame_ = true;
        after_cont_ = false;
        oversize_ = false;
        current_ = w.data;
        words_.clear();
        descrambler_.reset();
        return false;
      case prim::kEof: {
        after_cont_ = false;
        current_ = w.data;
        if (!in_frame_) return false;
        in_frame_ = false;
        frame_.fis.assign(words_.begin(), words_.end());
        frame_.crc_ok = false;
        frame_.oversize = oversize_;
        if (!frame_.fis.empty() && !oversize_) {
          uint32_t crc = frame_.fis.back();
          frame_.fis.pop_back();
          frame_.crc_ok = crc_of(frame_.fis.data(), frame_.fis.size()) == crc;
        }
        return true;
      }
      default:
        current_ = w.data;
        after_cont_ = false;
        return false;
    }
  }
  if (after_cont_) return false;  // junk after CONT
  data_flowing_ = true;
  if (!in_frame_) return false;
  if (words_.size() < limit_) words_.push_back(descrambler_.scramble(w.data));
  else oversize_ = true;
  return false;
}

}  // namespace fisrig::link
