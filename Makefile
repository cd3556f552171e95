# trainyard: the two commands of the README, plus helpers.
#   make run    install, build, start PostgreSQL + server + one worker
#   make test   install, build with sanitizers, run every test (ASan+UBSan, then TSan)
#   make package  Debian packages of a release build in build-release/debs
.PHONY: run test build bench clean format package

run:
	@scripts/run.sh

test:
	@scripts/test.sh

build:
	@scripts/build.sh

package:
	@packaging/build-debs.sh

bench:
	@scripts/deps.sh bench
	@bench/run-all.sh

format:
	@find common server scheduler worker cli tests bench -name '*.[ch]' -print0 | xargs -0 clang-format -i

clean:
	rm -rf build build-release build-tsan
