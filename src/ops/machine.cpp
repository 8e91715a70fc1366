// The runner's side of the steps, and nothing more: each one a request on the port, or a wait, its
// outcome handed back to the machine that asked for it.
#include "ops/machine.hpp"
#include "ops/requests.hpp"

namespace zklock::detail {

step_runner::~step_runner()
{
    if (watch_) watch_->cancel_wait();
}

void step_runner::perform(zk_steps& steps)
{
    for (auto& st : steps.take()) perform(std::move(st));
}

void step_runner::drop_watch() noexcept
{
    if (watch_) watch_->cancel_wait();
    watch_.reset();
}

void step_runner::perform(zk_step st)
{
    using op = zk_step::op;
    std::shared_ptr<watch_state> w;
    if (st.watch && (st.what == op::get_data || st.what == op::get_children || st.what == op::exists)) {
        drop_watch();
        w = s_->make_watch();
        watch_ = w;
        watch_tag_ = st.tag;
    }
    const auto tag = st.tag;
    auto self = shared_from_this();
    switch (st.what) {
    case op::get_data:
        return s_->get_data(st.path, std::move(w), [self, tag](error_code ec, std::string data, zklock::stat stat) {
            zk_outcome r{tag, ec};
            r.data = std::move(data);
            r.stat = stat;
            self->on_outcome(std::move(r));
        });
    case op::get_children:
        return s_->get_children(st.path, std::move(w), [self, tag](error_code ec, std::vector<std::string> children) {
            zk_outcome r{tag, ec};
            r.children = std::move(children);
            self->on_outcome(std::move(r));
        });
    case op::exists:
        return s_->exists(st.path, std::move(w), [self, tag](error_code ec, std::optional<zklock::stat> stat) {
            zk_outcome r{tag, ec};
            r.exists = stat;
            self->on_outcome(std::move(r));
        });
    case op::check_chroot:
        return detail::check_chroot(*s_, [self, tag](error_code ec) { self->on_outcome(zk_outcome{tag, ec}); });
    case op::set_data:
        return s_->set_data(st.path, st.data, st.version, [self, tag](error_code ec, zklock::stat stat) {
            zk_outcome r{tag, ec};
            r.stat = stat;
            self->on_outcome(std::move(r));
        });
    case op::remove: return s_->remove(st.path, st.version, [self, tag](error_code ec) { self->on_outcome(zk_outcome{tag, ec}); });
    case op::multi:
        return s_->multi(st.ops, [self, tag](error_code ec, std::vector<multi_result> results) {
            zk_outcome r{tag, ec};
            r.results = std::move(results);
            self->on_outcome(std::move(r));
        });
    case op::wait_connected: {
        auto deliver = [tag](step_runner& self, error_code ec) { self.on_outcome(zk_outcome{tag, ec}); };
        if (held_ == held::by_waits)
            return s_->wait_connected(st.generation, [self, deliver](error_code ec) { deliver(*self, ec); });
        return s_->wait_connected(st.generation, [weak = weak_from_this(), deliver](error_code ec) {
            if (auto self = weak.lock()) deliver(*self, ec);
        });
    }
    case op::wait_watch: {
        if (!watch_ || watch_tag_ != tag) return;  // not the watch kept: it never fires for this machine
        auto deliver = [w = watch_, tag](step_runner& self, error_code ec, watch_event ev) {
            if (self.watch_ != w) return;
            zk_outcome r{tag, ec};
            r.event = std::move(ev);
            self.on_outcome(std::move(r));
        };
        if (held_ == held::by_waits)
            return watch_->wait([self, deliver](error_code ec, watch_event ev) { deliver(*self, ec, std::move(ev)); });
        return watch_->wait([weak = weak_from_this(), deliver](error_code ec, watch_event ev) {
            if (auto self = weak.lock()) deliver(*self, ec, std::move(ev));
        });
    }
    }
}

}  // namespace zklock::detail
