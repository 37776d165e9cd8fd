# sim2real: set-up, tests, demo and benchmarks on a fresh Debian 12 machine.
#   make demo    the main job on the embedded default (PyBullet sim vs the reality stand-in)
#   make pipeline  the sim-to-real chain: collect, identify, resimulate, Realeasy, kernels,
#                evaluate with an acceptance gate (sim2real_pipeline; REALITY_CONFIG= TRAJECTORIES=
#                SEED= OUT= SIM=pybullet|gazebo; 43 min on 2 cores beside another run)
#   make test    every test: pytest (libraries), C++ tests, rostest integration tests
#   make bench   performance figures into bench/results/*.json
#   make docker  the robot PC image (docker or podman; docker/README.md)
#   make docker-test  that image built from a bare Debian base made here, smoke-tested inside and
#                on the host (CI runs it after make test)
#   make gazebo  the Gazebo 11 image (Debian 11 base made here; docker/gazebo/README.md)
#   make gazebo-test  that image built from this checkout and the Gazebo tests against it (CI)
#   make study   the Realeasy accuracy and transfer figures (realeasy_ros/results/, ~35 min)
#   make diffnea-results  DiffNEA Table 1 (iiwa) and the Panda identification loop (~40 min)
#   make kernel-results   the delivery-vehicle experiment and the Panda kernels (~6 min)
# Each runs `make setup` first; setup is idempotent (apt, venv, catkin build).
SHELL := /bin/bash
.SHELLFLAGS := -e -o pipefail -c
.DEFAULT_GOAL := help

ROOT     := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
VENV     := $(ROOT)/.venv
WS       := $(ROOT)/build/ws
PACKAGES := sim2real_checks sim2real_gazebo panda_gazebo panda_sim2real panda_fci panda_pairs realeasy_ros kernel_manager_ros compliant_actuator_gazebo diffnea_ros trifinger_controllers sim2real_pipeline
RUN      := source $(ROOT)/env.sh &&

.PHONY: help setup apt venv workspace test test-unit test-ros demo pipeline bench study diffnea-results compliant-results kernel-results trifinger-bo trifinger-rpl docker docker-test gazebo gazebo-test clean

help:
	@echo "make demo | make pipeline | make test | make bench | make docker | make docker-test | make gazebo | make gazebo-test | make study | make diffnea-results | make compliant-results | make kernel-results | make trifinger-bo | make trifinger-rpl | make setup | make clean"

setup: apt venv workspace

# Debian packages: ROS 1 (ros_comm from Debian), build tools. Installs only what is missing and
# says what it installs (tools/apt_install.sh; tools/test/test_apt_install.py checks it).
apt:
	bash $(ROOT)/tools/apt_install.sh $(ROOT)/apt-packages.txt

# Python venv from Debian's interpreter so rospy (Debian) and torch (pip) import together.
venv: $(VENV)/.requirements.stamp
$(VENV)/.requirements.stamp: requirements.txt
	mkdir -p $(ROOT)/build
	[ -x $(VENV)/bin/python ] || /usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(VENV)/bin/pip install -q -r requirements.txt > $(ROOT)/build/pip.log 2>&1 \
	  || { tail -n 30 $(ROOT)/build/pip.log; exit 1; }
	touch $@

# catkin stops at the root package.xml: the workspace's src/ holds the metapackage (links to the
# root's package.xml, CMakeLists.txt and launch/; a link to the root itself would contain the
# workspace, a loop rospack refuses) and a link to each package folder (see README).
workspace: venv
	mkdir -p $(WS)/src/sim2real
	[ ! -L $(WS)/src/sim2real ] || rm $(WS)/src/sim2real
	for f in package.xml CMakeLists.txt launch; do ln -sfn $(ROOT)/$$f $(WS)/src/sim2real/$$f; done
	for p in $(PACKAGES); do ln -sfn $(ROOT)/$$p $(WS)/src/$$p; done
	source $(VENV)/bin/activate && cd $(WS) && \
	  catkin_make -DPYTHON_EXECUTABLE=$(VENV)/bin/python -DCMAKE_BUILD_TYPE=Release \
	    -DCATKIN_ENABLE_TESTING=ON > $(ROOT)/build/catkin_make.log 2>&1 \
	  || { tail -n 40 $(ROOT)/build/catkin_make.log; exit 1; }
	@echo "workspace: built $(WS) (log: build/catkin_make.log)"

test: setup
	$(RUN) bash $(ROOT)/tools/run_tests.sh

demo: setup
	$(RUN) bash $(ROOT)/tools/demo.sh

# The sim-to-real chain (sim2real_pipeline/README.md): OUT/pipeline.json and OUT/report.md; the work
# directory OUT/work is resumable (a second run keeps what finished with the same settings).
OUT ?= $(ROOT)/reports/pipeline
pipeline: setup $(if $(filter gazebo,$(SIM)),gazebo)
	$(RUN) rosrun sim2real_pipeline pipeline --out $(OUT) --seed $(or $(SEED),0) \
	  $(if $(SIM),--sim $(SIM)) \
	  $(if $(REALITY_CONFIG),--reality-config $(abspath $(REALITY_CONFIG))) \
	  $(if $(TRAJECTORIES),--trajectories $(TRAJECTORIES))

bench: setup gazebo
	$(RUN) bash $(ROOT)/tools/install_bench_peers.sh
	$(RUN) python $(ROOT)/bench/run_bench.py --out $(ROOT)/bench/results

study: setup
	$(RUN) bash $(ROOT)/tools/realeasy_study.sh

# DiffNEA figures (diffnea_ros/results/): paper 002 Table 1 and Fig. 1 on the simulated iiwa (the
# paper's text, then the authors' L4DC configurations), and the Panda identification loop against
# the reality stand-in (~40 min in all).
diffnea-results: setup
	$(RUN) python $(ROOT)/diffnea_ros/scripts/reproduce_table1 --online --online-epochs 10 --threads 1 \
	  --out-dir $(ROOT)/diffnea_ros/results --json $(ROOT)/diffnea_ros/results/table1.json
	$(RUN) python $(ROOT)/diffnea_ros/scripts/reproduce_table1 --init random --draws l4dc --baselines none \
	  --os-tasks 0 --threads 1 --out-dir $(ROOT)/diffnea_ros/results/l4dc_draws \
	  --json $(ROOT)/diffnea_ros/results/l4dc_draws/table1.json
	$(RUN) python $(ROOT)/diffnea_ros/scripts/reproduce_table1 --init random --draws l4dc --com urdf --threads 1 \
	  --out-dir $(ROOT)/diffnea_ros/results/l4dc_config \
	  --json $(ROOT)/diffnea_ros/results/l4dc_config/table1.json
	$(RUN) python $(ROOT)/diffnea_ros/scripts/reproduce_table1 --init random --draws l4dc --com urdf --duration 40 \
	  --epochs 400 --os-tasks 0 --threads 1 --out-dir $(ROOT)/diffnea_ros/results/l4dc_config_40s \
	  --json $(ROOT)/diffnea_ros/results/l4dc_config_40s/table1.json
	$(RUN) bash $(ROOT)/tools/diffnea_panda.sh

# Compliant-actuator figures (compliant_actuator_gazebo/results/): paper 003 Fig. 8 step responses,
# the §4.2.1 chirp responses and the §4.2.2 2-DoF steps and eq. 12 sinusoid in the embedded
# simulation and in Gazebo 11 side by side (the Gazebo image: make gazebo), the §4.3 ILC (the
# paper's arm, and two comparison arms) and the §4.2.3 5-DoF box push in the embedded simulation
# (~8 min).
compliant-results: setup gazebo
	$(RUN) rosrun compliant_actuator_gazebo reproduce_fig8 --engine embedded gazebo \
	  --json $(ROOT)/compliant_actuator_gazebo/results/fig8.json --plot $(ROOT)/compliant_actuator_gazebo/results/fig8.png
	$(RUN) rosrun compliant_actuator_gazebo reproduce_ilc \
	  --json $(ROOT)/compliant_actuator_gazebo/results/ilc.json --plot $(ROOT)/compliant_actuator_gazebo/results/ilc.png
	$(RUN) rosrun compliant_actuator_gazebo reproduce_chirp --engine embedded gazebo \
	  --json $(ROOT)/compliant_actuator_gazebo/results/chirp.json --plot $(ROOT)/compliant_actuator_gazebo/results/chirp.png
	$(RUN) rosrun compliant_actuator_gazebo reproduce_two_dof --engine embedded gazebo \
	  --json $(ROOT)/compliant_actuator_gazebo/results/two_dof.json --plot $(ROOT)/compliant_actuator_gazebo/results/two_dof.png
	$(RUN) rosrun compliant_actuator_gazebo reproduce_clik \
	  --json $(ROOT)/compliant_actuator_gazebo/results/clik.json --plot $(ROOT)/compliant_actuator_gazebo/results/clik.png

# State-space kernel figures (kernel_manager_ros/results/): paper 001's delivery-vehicle experiment
# (deployment = our simulation with a ramp / a 1 Hz GPS) and the kernels applied to the Panda
# simulator against the reality stand-in (~6 min).
kernel-results: setup
	$(RUN) rosrun kernel_manager_ros vehicle-experiment --missions 100 --seed 0 --work-dir $(ROOT)/build/vehicle_experiment \
	  --json $(ROOT)/kernel_manager_ros/results/vehicle_experiment.json --plots $(ROOT)/kernel_manager_ros/results/plots
	cp $(ROOT)/build/vehicle_experiment/kernels_ramp.yaml $(ROOT)/build/vehicle_experiment/kernels_slow_gps.yaml \
	  $(ROOT)/kernel_manager_ros/results/kernels/
	$(RUN) rosrun kernel_manager_ros panda-kernels --trajectories 40 --seed 0 --out-dir $(ROOT)/build/panda_kernels \
	  --json $(ROOT)/kernel_manager_ros/results/panda_kernels.json --plots $(ROOT)/kernel_manager_ros/results/plots

# TriFinger tables (trifinger_controllers/README.md, simulation): Table III's Bayesian optimisation
# (~3 h per level; BO_LEVELS="3 4" by default, level 4 at 10 deg) and Table IV's residual policies
# (offline: 500 000 SAC steps per controller, many hours).
BO_LEVELS ?= 3 4
trifinger-bo: setup
	for level in $(BO_LEVELS); do $(RUN) LEVEL=$$level bash $(ROOT)/tools/trifinger_results.sh bo; done

trifinger-rpl: setup
	$(RUN) bash $(ROOT)/tools/trifinger_results.sh rpl

# The robot PC image (docker/Dockerfile). FRANKY_WHEEL=file.whl (in docker/wheels/) swaps in a
# franky built against another libfranka, e.g. 0.9.x for a Panda on an older system image.
docker:
	bash $(ROOT)/tools/docker_build.sh $(if $(FRANKY_WHEEL),--franky-wheel $(FRANKY_WHEEL))

# The image from a bare Debian base (mmdebstrap, no registry) and its smoke test (tools/docker_test.sh).
docker-test: setup
	bash $(ROOT)/tools/docker_test.sh

# Gazebo 11 (Debian 11 container; docker/gazebo/README.md): the image, and the tests in gzserver.
gazebo:
	bash $(ROOT)/tools/apt_install.sh $(ROOT)/docker/host-packages.txt
	bash $(ROOT)/tools/gazebo_image.sh

gazebo-test: setup gazebo
	$(RUN) bash $(ROOT)/tools/gazebo_test.sh

clean:
	rm -rf $(ROOT)/build $(ROOT)/reports $(ROOT)/.ros
