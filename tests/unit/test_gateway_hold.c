/* The gateway holding a request for approval (gateway.h, approvals.h), end
 * to end on loopback: a gateway on its own thread as in a session's keeper,
 * an upstream on another, the queue decided from here as the keeper's
 * control socket would. A held request goes on when approved, is answered
 * 403 with the reason when denied, and is answered, not dropped, when the
 * gateway goes away while it waits. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "approvals.h"
#include "gateway.h"
#include "netproxy.h"
#include "netrules.h"

/* ---- an upstream that answers every request "ok" ---- */

static int up_fd = -1;
static uint16_t up_port;
static pthread_t up_thread;

static void *up_main(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept4(up_fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			return NULL;
		char buf[4096];
		size_t got = 0;
		while (got < sizeof(buf) - 1) {
			ssize_t n = read(c, buf + got, sizeof(buf) - 1 - got);
			if (n <= 0)
				break;
			got += (size_t)n;
			buf[got] = '\0';
			if (strstr(buf, "\r\n\r\n"))
				break;
		}
		static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n";
		(void)!write(c, ok, sizeof(ok) - 1);
		close(c);
	}
}

static uint16_t listen_loopback(int *ret_fd)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 128), 0);
	socklen_t sl = sizeof(sin);
	getsockname(fd, (struct sockaddr *)&sin, &sl);
	*ret_fd = fd;
	return ntohs(sin.sin_port);
}

/* ---- the gateway ---- */

static moat_netproxy *proxy;
static uint16_t proxy_port;
static moat_approvals *ap;

static void gateway_start(bool with_queue)
{
	_cleanup_netrules_builder_ moat_netrules_builder *b = moat_netrules_builder_new();
	moat_error err = {0};
	const char *post[] = {"POST"};
	moat_netrule_spec spec = {.host = "up.test", .ports = &up_port, .n_ports = 1, .methods = post, .n_methods = 1,
				  .action = MOAT_NET_APPROVE};
	assert_int_equal(moat_netrules_builder_add(b, &spec, &err), 0);
	assert_int_equal(moat_netrules_builder_allow_private(b, "127.0.0.1/32", &err), 0);
	moat_netrules *rules = NULL;
	assert_int_equal(moat_netrules_builder_finish(b, &rules, &err), 0);
	static moat_gateway_host hosts[] = {{"up.test", "127.0.0.1"}};
	ap = NULL;
	if (with_queue) {
		moat_approvals_opts o = {.session = "s", .timeout_ms = 60000};
		assert_int_equal(moat_approvals_new(&o, &ap, &err), 0);
	}
	moat_gateway_config cfg = {.rules = rules, .hosts = hosts, .n_hosts = 1, .connect_timeout_ms = 2000,
				   .approvals = ap};
	int fd;
	proxy_port = listen_loopback(&fd);
	moat_netproxy_fds fds = {.proxy = fd, .transparent = -1, .dns = -1, .upstream_netns = -1};
	if (moat__netproxy_start(&cfg, &fds, &proxy, &err) < 0)
		fail_msg("gateway: %s", err.msg);
	moat_netrules_unref(rules);
}

static void gateway_stop(void)
{
	moat__netproxy_stop(proxy, NULL);
	proxy = NULL;
	moat_approvals_free(ap);
	ap = NULL;
}

/* Sends a POST through the gateway, with extra header lines; returns the
 * client's socket. */
static int post_with(const char *extra)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {.tv_sec = 20};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(proxy_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	char req[256];
	snprintf(req, sizeof(req),
		 "POST http://up.test:%u/send HTTP/1.1\r\nHost: up.test:%u\r\n%sContent-Length: 2\r\n\r\nhi", up_port,
		 up_port, extra);
	assert_int_equal(moat__write_all(fd, req, strlen(req)), 0);
	return fd;
}

static int post(void)
{
	return post_with("");
}

static void read_all(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	while (got + 1 < cap) {
		ssize_t n = read(fd, buf + got, cap - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
}

/* The id of the only approval waiting, once there is one (bounded). */
static void waiting_id(char *id)
{
	for (int i = 0; i < 2000; i++) {
		json_t *r = json_pack("{s:s}", "op", "ls"), *a = NULL;
		moat_error err = {0};
		assert_int_equal(moat_approvals_request(ap, 0, r, &a, &err), 0);
		json_decref(r);
		json_t *v = json_object_get(a, "approvals");
		if (json_array_size(v) == 1) {
			strcpy(id, json_string_value(json_object_get(json_array_get(v, 0), "id")));
			json_decref(a);
			return;
		}
		json_decref(a);
		usleep(10000);
	}
	fail_msg("no request was held");
}

static void decide(const char *op, const char *id, const char *reason)
{
	json_t *r = json_pack("{s:s, s:s}", "op", op, "id", id), *a = NULL;
	if (reason)
		json_object_set_new(r, "reason", json_string(reason));
	moat_error err = {0};
	if (moat_approvals_request(ap, 0, r, &a, &err) < 0)
		fail_msg("%s: %s", op, err.msg);
	json_decref(r);
	json_decref(a);
}

static void test_approved(void **state)
{
	(void)state;
	gateway_start(true);
	int fd = post();
	char id[16], resp[4096];
	waiting_id(id);
	decide("approve", id, NULL);
	read_all(fd, resp, sizeof(resp));
	close(fd);
	assert_non_null(strstr(resp, "HTTP/1.1 200 OK"));
	assert_non_null(strstr(resp, "ok\n"));
	gateway_stop();
}

static void test_denied(void **state)
{
	(void)state;
	gateway_start(true);
	int fd = post();
	char id[16], resp[4096], want[128];
	waiting_id(id);
	decide("deny", id, "not today");
	read_all(fd, resp, sizeof(resp));
	close(fd);
	assert_non_null(strstr(resp, "HTTP/1.1 403 Forbidden"));
	snprintf(want, sizeof(want), "\r\n\r\nmoat: denied by a reviewer: not today (approval %s)\n", id);
	assert_non_null(strstr(resp, want));
	gateway_stop();
}

/* The sandbox ends while a request waits: the client is answered in the
 * gateway's last moments, whether the keeper ended the queue first or not. */
static void test_answered_at_the_end(void **state)
{
	(void)state;
	for (int ended_first = 0; ended_first < 2; ended_first++) {
		gateway_start(true);
		int fd = post();
		char id[16], resp[4096];
		waiting_id(id);
		if (ended_first)
			moat_approvals_end(ap, "the session was stopped before anyone decided");
		/* Stopped at once: the wake-up may not have been read. */
		moat__netproxy_stop(proxy, NULL);
		proxy = NULL;
		read_all(fd, resp, sizeof(resp));
		close(fd);
		if (!strstr(resp, "HTTP/1.1 403 Forbidden"))
			fail_msg("ended_first %d: got '%s'", ended_first, resp);
		assert_non_null(strstr(resp, ended_first ? "moat: denied: the session was stopped before anyone decided"
							 : "moat: denied: the sandbox ended before anyone decided"));
		moat_approvals_free(ap);
		ap = NULL;
	}
}

/* An override would have a person approve one method and the server act
 * on another: refused, never held. */
static void test_override_refused(void **state)
{
	(void)state;
	gateway_start(true);
	int fd = post_with("X-HTTP-Method-Override: DELETE\r\n");
	char resp[4096];
	read_all(fd, resp, sizeof(resp));
	close(fd);
	assert_non_null(strstr(resp, "HTTP/1.1 403 Forbidden"));
	assert_non_null(strstr(resp, "which a request with a method override (DELETE) cannot have"));
	json_t *r = json_pack("{s:s}", "op", "ls"), *a = NULL;
	moat_error err = {0};
	assert_int_equal(moat_approvals_request(ap, 0, r, &a, &err), 0);
	assert_int_equal(json_array_size(json_object_get(a, "approvals")), 0);
	json_decref(r);
	json_decref(a);
	gateway_stop();
}

static void test_no_queue(void **state)
{
	(void)state;
	gateway_start(false);
	int fd = post();
	char resp[4096];
	read_all(fd, resp, sizeof(resp));
	close(fd);
	assert_non_null(strstr(resp, "HTTP/1.1 403 Forbidden"));
	assert_non_null(strstr(resp, "needs a person's approval, and this sandbox has no approval queue"));
	gateway_stop();
}

int main(void)
{
	up_port = listen_loopback(&up_fd);
	pthread_create(&up_thread, NULL, up_main, NULL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_approved),
		cmocka_unit_test(test_denied),
		cmocka_unit_test(test_answered_at_the_end),
		cmocka_unit_test(test_override_refused),
		cmocka_unit_test(test_no_queue),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);
	shutdown(up_fd, SHUT_RDWR);
	pthread_join(up_thread, NULL);
	close(up_fd);
	return r;
}
