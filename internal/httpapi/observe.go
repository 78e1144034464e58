package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the API's Prometheus metrics, labelled by chi's route
// pattern ("/catalogs/{catalog}/packages"), not the raw path, so that the
// number of series does not grow with catalogs, packages or junk paths.
type metrics struct {
	duration *prometheus.HistogramVec
	requests *prometheus.CounterVec
}

// unmatchedRoute labels requests no route matched.
const unmatchedRoute = "unmatched"

// newMetrics registers the metrics on reg. Like the sync's metrics, they
// are registered once per registry: a second registration panics.
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "catalogd_http_request_duration_seconds",
			Help: "Time to answer an API request, by route pattern.",
			// Most answers take well under a millisecond; /all streams take seconds.
			Buckets: []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "catalogd_http_requests_total",
			Help: "API requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
	}
	reg.MustRegister(m.duration, m.requests)
	return m
}

// observe logs each request at V(1) (method, route pattern, status, bytes
// and duration) and records it in the metrics, if any.
func observe(log logr.Logger, m *metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			defer func() {
				elapsed := time.Since(start)
				route := unmatchedRoute
				if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
					route = rc.RoutePattern()
				}
				status := ww.Status()
				if status == 0 {
					status = http.StatusOK // nothing written: net/http answers 200
				}
				log.V(1).Info("request", "method", r.Method, "route", route, "status", status,
					"bytes", ww.BytesWritten(), "duration", elapsed.String())
				if m != nil {
					m.duration.WithLabelValues(route).Observe(elapsed.Seconds())
					m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
				}
			}()
			next.ServeHTTP(ww, r)
		})
	}
}
