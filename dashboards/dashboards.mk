# dashboards/ — static files, nothing to build.  `make install` also puts
# the web UI and the Grafana dashboards under $(PREFIX)/share/glassfs/dashboards/
# (run glass-aggd with --ui $(PREFIX)/share/glassfs/dashboards/web there, as aggregator/systemd/aggd.conf.example does).

DASH_SHARE := $(DESTDIR)$(PREFIX)/share/glassfs/dashboards

.PHONY: install-dashboards
install: install-dashboards
install-dashboards:
	install -d $(DASH_SHARE)/web/js $(DASH_SHARE)/grafana
	install -m 644 dashboards/web/index.html dashboards/web/app.css $(DASH_SHARE)/web/
	install -m 644 dashboards/web/js/*.js $(DASH_SHARE)/web/js/
	install -m 644 dashboards/grafana/*.json $(DASH_SHARE)/grafana/
