# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# metrics.mk - the stats pages seen from outside: `check-metrics` runs a
# serving workload (tests/metrics/workload.c) and checks `hkvctl metrics`
# against a real Prometheus server and promtool, `hkvctl top` in tmux, the
# alerting rules and the dashboard (contrib/), stale pages after SIGKILL.

METRICS_WORKLOAD := $(BUILD)/tests/metrics-workload

$(METRICS_WORKLOAD): tests/metrics/workload.c $(BUILD)/libhugekv.so | $(BUILD)/tests
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(HKV_CFLAGS) $< -L$(BUILD) -lhugekv \
		-Wl,-rpath,'$$ORIGIN/..' $(HKV_LDFLAGS) $(LIBS) -o $@

.PHONY: check-metrics
check-metrics: $(BUILD)/hkvctl $(METRICS_WORKLOAD)
	$(Q)tests/metrics/run --build $(BUILD)

CHECK_EXTRA	+= check-metrics

# the alerting rules and the dashboard, for the operator to copy and tune
install::
	install -d $(DESTDIR)$(PREFIX)/share/hugekv/prometheus $(DESTDIR)$(PREFIX)/share/hugekv/grafana
	install -m 0644 contrib/prometheus/hugekv-rules.yml contrib/prometheus/hugekv-rules.test.yml \
		$(DESTDIR)$(PREFIX)/share/hugekv/prometheus/
	install -m 0644 contrib/grafana/hugekv-dashboard.json $(DESTDIR)$(PREFIX)/share/hugekv/grafana/
