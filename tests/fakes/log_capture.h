#pragma once
// LogCapture: what spdlog's default logger writes while a LogCapture lives, for tests that
// check what the product logs (and how often).

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace volcache {

// Create it before the objects whose logging it captures (reflectors, workers), so that it
// outlives them.
class LogCapture {
 public:
  LogCapture() : old_(spdlog::default_logger()), sink_(std::make_shared<Sink>()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink_));
  }
  ~LogCapture() { spdlog::set_default_logger(old_); }
  std::vector<std::string> lines() const { return sink_->lines(); }
  size_t Count(const std::string& needle) const {
    size_t n = 0;
    for (const auto& l : lines()) n += l.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }

 private:
  class Sink final : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::vector<std::string> lines() {
      std::lock_guard<std::mutex> lock(this->mutex_);
      return lines_;
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      lines_.emplace_back(msg.payload.data(), msg.payload.size());
    }
    void flush_() override {}

   private:
    std::vector<std::string> lines_;
  };
  std::shared_ptr<spdlog::logger> old_;
  std::shared_ptr<Sink> sink_;
};

}  // namespace volcache
