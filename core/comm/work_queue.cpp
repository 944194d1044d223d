#include "core/comm/work_queue.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace ofl::internal::comm {

namespace {

// A thread that runs tasks in submission order; the destructor runs what is left and joins.
class WorkQueue {
 public:
  WorkQueue() : thread_([this] { loop(); }) {}
  ~WorkQueue() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

  std::shared_future<void> push(std::function<void()> fn) {
    std::packaged_task<void()> task(std::move(fn));
    std::shared_future<void> done = task.get_future().share();
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
    return done;
  }

 private:
  void loop() {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping, nothing left
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();  // an exception lands in the task's future
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

struct Entry {
  std::weak_ptr<Communicator> comm;
  std::shared_ptr<WorkQueue> queue;
};

}  // namespace

std::shared_future<void> submit(const std::shared_ptr<Communicator>& c, std::function<void()> fn) {
  static std::mutex mu;
  static std::map<const Communicator*, Entry> queues;
  std::shared_ptr<WorkQueue> queue;
  {
    std::lock_guard<std::mutex> lock(mu);
    std::erase_if(queues, [](const auto& kv) { return kv.second.comm.expired(); });
    Entry& e = queues[c.get()];
    if (!e.queue) e = {c, std::make_shared<WorkQueue>()};
    queue = e.queue;
  }
  // The task holds the communicator, so it outlives the work queued on it.
  return queue->push([c, fn = std::move(fn)] { fn(); });
}

}  // namespace ofl::internal::comm
